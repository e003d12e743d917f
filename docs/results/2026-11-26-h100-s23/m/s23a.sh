# session 23 call A: the commits of session 22 not yet GPU-run (851ec080): paged parts, stream batch, compressed cache, host-run stand-ins
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 420 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_paged_parts.py tests/backend/test_gpu_stream_batch.py tests/differential/test_gpu_compressed_cache.py tests/exec/test_like_pattern_leak.py tests/exec/test_coprocess_host_run.py tests/exec/test_cold_read_ahead_host_run.py tests/backend/test_close_consumed_host_run.py tests/backend/test_stream_early_stop_host_run.py tests/backend/test_stream_warm_host_run.py tests/backend/test_stream_prime_host_run.py tests/exec/test_warm_tail_host_run.py tests/exec/test_hot_replay_host_run.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
date
