# session 22 call O: co-processing differential (forced, compressed config included) and early-scan GPU tests at the final code
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 420 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py tests/exec/test_gpu_early_scan.py tests/exec/test_like_pattern_leak.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -6 | cut -c1-250
date
