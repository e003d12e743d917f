# session 23 call K: gc_pause with its 2 s hold and gc callback (1aedcbf5): on / off alternating, 10 rounds; early-scan GPU tests
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 ckpt/gcprobe.py $B/ssb-sf20 10 > $OUT/main/gcprobe.log 2>&1; echo "probe rc=$?"
cut -c1-300 $OUT/main/gcprobe.log | head -12; date
timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_early_scan.py tests/test_gc_pause.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -4
date
