# session 25 call E: GPU co-processing tests at 9ef478a0; SSB SF 20 gpu vs auto interleaved after 16 learning runs
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -5 | cut -c1-250; date
wait; cat $OUT/main/gen-outer.log; date
timeout -k 5 150 python3 ckpt/coab.py $B/ssb-sf20 16 6 > $OUT/main/ab20.log 2>&1; echo "ab rc=$?"; sed 's/auto runs \[[^]]*\]//' $OUT/main/ab20.log | cut -c1-100; date
