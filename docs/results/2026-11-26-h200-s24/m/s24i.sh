# session 24 call I: SSB SF 50, "auto" after the background set-up keeps the back's pages decoded (first runs' decoding no outcome): workers after the first delivery vs with the fact pipeline, each in a clean process; GPU auto test
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf50 ssb --sf 50 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py -k "auto_on_warm or forced_splits" > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -5 | cut -c1-250
wait; cat $OUT/main/gen-outer.log
for m in auto-first auto; do
timeout -k 5 200 python3 scripts/coprocess_warm_table.py $B/ssb-sf50 --queries q1.1,q1.2,q1.3,q2.1,q3.3,q4.1 --repeat 9 --threads 16 --budget-s 190 \
  --modes gpu,$m --json $OUT/main/$m.json > $OUT/main/$m.log 2>&1; echo "table $m rc=$?"
grep -A8 "^query" $OUT/main/$m.log | cut -c1-200; done; date
