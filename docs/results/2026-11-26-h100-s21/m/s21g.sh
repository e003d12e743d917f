# session 21 call G: the GPU test files call F did not reach (shared results' placeholders first)
. ckpt/env.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 ${TEST_T:-400} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=6 tests/exec/test_shared_results.py \
  tests/exec/test_kept_builds.py tests/exec/test_like_pattern_leak.py $(ls tests/exec/test_gpu_*.py | grep -E "fusion|compiled_fold|compiled_ext|early_scan|hot_replay|cold_scan|resident_split|budget_admission|decoded_placement") \
  > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -12 | cut -c1-250; date
