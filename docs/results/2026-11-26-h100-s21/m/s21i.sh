# session 21 call I: after removing the query-priority stream: GPU tests of the query path; SSB SF 20 hot+warm, 10% hot+warm with DuckDB
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 200 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_early_scan.py tests/exec/test_gpu_hot_replay.py \
  tests/exec/test_gpu_exec.py tests/api/test_api_gpu.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 120 ssb20-gpu $S --mode hot,warm --repeat 3 --vs duckdb
hb 120 ssb20-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
date
