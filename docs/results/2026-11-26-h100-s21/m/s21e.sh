# session 21 call E: co-processing GPU tests (forced on, auto, forced split with compiled shares); all 13 SSB queries gpu/auto/split/cpu-hot
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nproc
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 330 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=8 tests/differential/test_gpu_coprocess.py \
  > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed|^[0-9.]+s " $OUT/main/tests.log | tail -14 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
timeout -k 5 200 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q1.2,q1.3,q2.1,q2.2,q2.3,q3.1,q3.2,q3.3,q3.4,q4.1,q4.2,q4.3 --repeat 5 \
  --modes gpu,auto,split%8@8-first,cpu-hot --budget-s 180 --json $OUT/main/tableE.json \
  > $OUT/main/tableE.log 2>&1; echo table rc=$?; grep -A20 "^query " $OUT/main/tableE.log | cut -c1-200; date
