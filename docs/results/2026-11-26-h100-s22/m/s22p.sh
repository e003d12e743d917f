# session 22 call P: the host-run tests (CuPy stood in) on the GPU machine after the batch-call fix
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/exec/test_like_pattern_leak.py tests/exec/test_coprocess_host_run.py tests/exec/test_cold_read_ahead_host_run.py tests/backend/test_close_consumed_host_run.py tests/backend/test_stream_early_stop_host_run.py tests/backend/test_stream_warm_host_run.py tests/backend/test_stream_prime_host_run.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -6 | cut -c1-250
date
