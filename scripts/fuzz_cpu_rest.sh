#!/usr/bin/env bash
# The CPU fuzz campaign of issue 15 (seed 20261125, 100,000 cases per configuration, values per
# configuration) on a range of cases, in JOBS worker processes for at most SECONDS_LIMIT seconds.
# Results: one campaign directory $OUT/rel10/$NAME-fuzz-cpu/ (campaign.json, results.jsonl,
# summary.txt, failures.txt when a case failed) and the log $OUT/rel10/$NAME-fuzz-cpu.log, mergeable
# with any other run of the campaign:
#   python tests/differential/fuzz_main.py --dir A --summary --merge B/results.jsonl
#
#   JOBS=16 SECONDS_LIMIT=45 CASES=72000:80000 NAME=ckpt bash scripts/fuzz_cpu_rest.sh
#
# Run from the repository root with hetdb (src/) and DuckDB importable (PYTHONPATH); PYTHON picks
# the interpreter (default python3). Exit status: 0 no failure, 1 a case failed, 124 the time limit's
# backstop killed the run (the tasks finished before it are recorded).
set -u
JOBS=${JOBS:-$(nproc)}
SECONDS_LIMIT=${SECONDS_LIMIT:-60}
CASES=${CASES:-72000:80000}
NAME=${NAME:-run}
PYTHON=${PYTHON:-python3}
DIR=${OUT:?set OUT to the folder for results}/rel10/$NAME-fuzz-cpu
LOG=$OUT/rel10/$NAME-fuzz-cpu.log
mkdir -p "$OUT/rel10"
echo "fuzz_cpu_rest: $JOBS processes, $SECONDS_LIMIT s, cases $CASES, $(nproc) cores -> $DIR" | tee "$LOG"
# --seconds stops the run cleanly (no task starts in its last 5 s, running ones stop between cases);
# timeout is a backstop 13 s later for a case that runs long
timeout --signal=TERM $((${SECONDS_LIMIT%.*} + 13)) "$PYTHON" tests/differential/fuzz_main.py \
    --dir "$DIR" --seed 20261125 --queries 100000 --device cpu --jobs "$JOBS" \
    --seconds "$SECONDS_LIMIT" --cases "$CASES" >> "$LOG" 2>&1
rc=$?
echo "fuzz_cpu_rest: exit $rc" >> "$LOG"
grep -E "^fuzz: this run|^fuzz: FAILED" "$LOG"
cat "$DIR/summary.txt" 2>/dev/null || echo "fuzz_cpu_rest: no task finished (no summary)"
exit $rc
