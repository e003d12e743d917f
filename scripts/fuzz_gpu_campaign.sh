#!/usr/bin/env bash
# The GPU fuzz campaign of issue 15, resumed: seed 20261126, 100,000 cases per configuration, one set
# of values per device (`--values device`: the 11 GPU configurations of a case share its compiled
# kernels), in JOBS worker processes for at most SECONDS_LIMIT seconds. The campaign's earlier runs
# are the results.jsonl files of the repository (rel9's first run, `PRIOR`; later runs committed as
# docs/results/*/*fuzz-gpu-results.jsonl): they are merged into a fresh campaign directory, so the
# run takes the cases nobody ran and the summary counts every run.
#
#   JOBS=16 SECONDS_LIMIT=75 NAME=final bash scripts/fuzz_gpu_campaign.sh
#
# SHARD=I/N takes blocks I, I+N, ... of the campaign (two runs side by side with SHARD=0/2 and 1/2
# never run a case twice); FUZZ_FREEZE=0 runs the workers without gc.freeze (fuzz_worker.run_task).
#
# Writes $OUT/rel11/$NAME-fuzz-gpu.log (the run's progress, then the campaign's summary: cases and
# answers per configuration, NVRTC/Numba compiles and garbage-collection seconds, failures), and
# $OUT/rel11/$NAME-fuzz-gpu-results.jsonl (this run's finished tasks only: commit it under
# docs/results/ to count them in the next run) and $OUT/rel11/$NAME-fuzz-gpu-failures.txt when a case
# failed (reports with replay commands). Run from the repository root with hetdb (src/) and DuckDB
# importable; PYTHON picks the interpreter (default python3). Exit status: 0 no failure, 1 a case
# failed, 124 the backstop timeout killed the run (the tasks finished before it are recorded).
set -u
JOBS=${JOBS:-$(nproc)}
SECONDS_LIMIT=${SECONDS_LIMIT:-60}
NAME=${NAME:-run}
PYTHON=${PYTHON:-python3}
PRIOR=${PRIOR:-docs/results/2026-11-25-rel9/final-fuzz-gpu-results.tgz}
mkdir -p "$OUT/rel11"
LOG=$OUT/rel11/$NAME-fuzz-gpu.log
DIR=$(mktemp -d /tmp/hetdb-fuzz-gpu-XXXXXX)
echo '{"seed": 20261126, "queries": 100000, "values": "device"}' > "$DIR/campaign.json"
tar xzf "$PRIOR" -O rel9-fuzz-gpu-dev/results.jsonl > "$DIR/results.jsonl"
for f in docs/results/*/*fuzz-gpu-results.jsonl; do
  [ -f "$f" ] && cat "$f" >> "$DIR/results.jsonl"
done
before=$(wc -l < "$DIR/results.jsonl")
echo "fuzz_gpu_campaign: $JOBS processes, $SECONDS_LIMIT s, shard ${SHARD:-0/1}, FUZZ_FREEZE=${FUZZ_FREEZE:-1}, $(nproc) cores, $before earlier tasks -> $DIR" | tee "$LOG"
# --seconds stops the run cleanly (no task starts in its last 5 s, running ones stop between cases);
# timeout is a backstop 12 s later for a case that runs long
timeout --signal=TERM $((${SECONDS_LIMIT%.*} + 12)) "$PYTHON" tests/differential/fuzz_main.py \
    --dir "$DIR" --device gpu --jobs "$JOBS" --gpu-jobs "$JOBS" --seconds "$SECONDS_LIMIT" --shard "${SHARD:-0/1}" >> "$LOG" 2>&1
rc=$?
echo "fuzz_gpu_campaign: exit $rc" >> "$LOG"
tail -n +$((before + 1)) "$DIR/results.jsonl" > "$OUT/rel11/$NAME-fuzz-gpu-results.jsonl"
[ -f "$DIR/failures.txt" ] && cp "$DIR/failures.txt" "$OUT/rel11/$NAME-fuzz-gpu-failures.txt"
echo "fuzz_gpu_campaign: this run's tasks: $(wc -l < "$OUT/rel11/$NAME-fuzz-gpu-results.jsonl")" | tee -a "$LOG"
grep -E "^fuzz: this run|^fuzz: FAILED|^fuzz: gpu kernel cache" "$LOG"
cat "$DIR/summary.txt" 2>/dev/null | tee -a "$LOG" || echo "fuzz_gpu_campaign: no task finished (no summary)"
rm -rf "$DIR"
exit $rc
