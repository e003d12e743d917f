# session 21 call A: GPU tests of shared results + co-processing; the co-processing table with the workers' compiled share
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader; nproc
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 200 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=5 tests/exec/test_shared_results.py \
  tests/differential/test_gpu_coprocess.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -12 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
timeout -k 5 300 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --repeat 7 \
  --modes gpu,gpu-load15,split%24-first,split%40-first,auto,cpu-hot --budget-s 280 --json $OUT/main/tableA.json \
  > $OUT/main/tableA.log 2>&1; echo table rc=$?; cut -c1-600 $OUT/main/tableA.log | tail -16; date
