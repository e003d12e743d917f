# session 24 call E: CPU parts merged on the host (dictionary keys as plain strings): GPU co-processing tests; the end of a forced split again, with the workers' GIL-held Python
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 240 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
wait; cat $OUT/main/gen-outer.log
for q in q3.3 q2.1 q4.1; do
timeout -k 5 100 python3 ckpt/coprobe2.py $B/ssb-sf20 $q 16 > $OUT/main/end-$q.log 2>&1; echo "$q rc=$?"; grep -E "^==|_final|workers|GIL" $OUT/main/end-$q.log | cut -c1-600 | tail -12
done; date
