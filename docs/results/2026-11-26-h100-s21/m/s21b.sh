# session 21 call B: shared-results GPU test; co-processing table with the compiled share (narrow copies)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nproc
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 100 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/exec/test_shared_results.py \
  > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -12 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
timeout -k 5 330 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --repeat 7 \
  --modes gpu,split%24-first,split%24-first@8,split%40-first,auto --budget-s 300 --json $OUT/main/tableB.json \
  > $OUT/main/tableB.log 2>&1; echo table rc=$?; cut -c1-400 $OUT/main/tableB.log | tail -16; date
