. ckpt/env.sh
mkdir -p $OUT
timeout 240 python3 -m pytest -q -m gpu --tb=short -p no:cacheprovider \
  "tests/sql/test_sql_corpus.py::test_corpus[extras.test-gpu]" \
  "tests/backend/test_gpu_replay.py::test_replayed_link_bytes_match_the_gpu" \
  tests/backend/test_gpu_stream_batch.py::test_early_stop_returns_every_pin_reservation_and_device_byte \
  "tests/differential/test_gpu_coprocess.py::test_coprocessed_suites_match_duckdb[ssb-batched]" > $OUT/fails.log 2>&1; echo rc=$?
timeout 280 python3 -m pytest -q -m gpu --tb=short -rs -p no:cacheprovider --durations=10 \
  "tests/differential/test_gpu_coprocess.py::test_coprocessed_suites_match_duckdb[tpch-compressed]" \
  tests/differential/test_gpu_coprocess.py::test_explain_shows_pages_on_the_cpu_and_off_turns_it_off \
  tests/differential/test_gpu_batches.py tests/differential/test_gpu_compressed_cache.py tests/differential/test_routes.py \
  tests/exec/test_gpu_compiled_ext.py tests/exec/test_gpu_compiled_strings.py tests/exec/test_gpu_compiled_wide.py \
  tests/exec/test_shared_results.py > $OUT/rest.log 2>&1; echo rc=$?
tail -5 $OUT/rest.log
