# session 25 call B: GPU co-processing tests alone; SSB SF 50 gpu vs auto interleaved after 12 learning runs (per-query keys, stepped shares, re-probes)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf50 ssb --sf 50 ) > $OUT/main/gen-outer.log 2>&1; cat $OUT/main/gen-outer.log; date
timeout -k 5 400 python3 ckpt/coab.py $B/ssb-sf50 12 8 > $OUT/main/ab50.log 2>&1; echo "ab rc=$?"; cut -c1-140 $OUT/main/ab50.log; date
timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -5 | cut -c1-250; date
