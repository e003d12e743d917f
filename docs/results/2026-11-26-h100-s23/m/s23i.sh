# session 23 call I: GPU tests of the paths the session's changes touch (pass-through deliveries as stored, no full collections in statements)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 520 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_batches.py tests/differential/test_routes.py tests/exec/test_gpu_budget_admission.py tests/exec/test_gpu_cold_scan.py tests/exec/test_gpu_fusion.py tests/exec/test_gpu_hot_replay.py tests/exec/test_gpu_resident_split.py tests/exec/test_kept_builds.py tests/exec/test_shared_results.py tests/differential/test_gpu_coprocess.py tests/backend/test_gpu_stream_prime.py tests/exec/test_gpu_zero_copy.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -12 | cut -c1-250
date
