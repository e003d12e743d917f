# checkpoint part 1: data + GPU tests of every branch + dec6's decode microbenchmark
. ckpt/env.sh
mkdir -p $OUT/gpu6 $OUT/dec6 $OUT/win6 $OUT/cpu6 $OUT/main $B
( timeout 240 bash scripts/gpu-bench.sh gen-tpch 10 > $OUT/main/gen10.log 2>&1; echo gen10 rc=$? >> $OUT/main/gen10.log ) &
T="python3 -m pytest -q -m gpu --tb=short -rs -p no:cacheprovider"
timeout 150 $T tests/exec/test_kept_builds.py tests/exec/test_shared_results.py tests/exec/test_gpu_compiled_rows.py \
  tests/exec/test_gpu_fusion.py > $OUT/gpu6/gpu-tests.log 2>&1; echo gpu6 rc=$?
timeout 130 $T tests/codec/test_codec_gpu.py tests/codec/test_gpu_compressed_kernels.py tests/backend/test_gpu_encoded_column.py \
  tests/backend/test_gpu_stream_batch.py tests/codec/test_gpu_string_pages.py > $OUT/dec6/gpu-tests.log 2>&1; echo dec6 rc=$?
timeout 100 $T tests/sql/test_sql_window_exec.py tests/backend/test_window_array_kernels.py tests/differential/test_window_suite.py \
  > $OUT/win6/gpu-tests-a.log 2>&1; echo win6 rc=$?
timeout 90 $T "tests/differential/test_gpu_coprocess.py::test_coprocessed_suites_match_duckdb[ssb-batched]" \
  "tests/differential/test_gpu_batches.py::test_gpu_compressed_batches_match_duckdb[ssb-256KB]" \
  "tests/sql/test_sql_corpus.py::test_corpus[extras.test-gpu]" > $OUT/main/gpu-tests.log 2>&1; echo main rc=$?
timeout 70 python3 scripts/gpu_decode_scan.py --rows 60e6 --repeat 5 > $OUT/dec6/decode-scan.log 2>&1; echo decode rc=$?
wait; tail -1 $OUT/main/gen10.log
for f in $OUT/*/gpu-tests*.log; do echo "== $f"; grep -aE "^(FAILED|ERROR)|passed|failed" $f | tail -8; done
