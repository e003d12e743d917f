# final part 1: data in the background; GPU tests of the branches' final states
. ckpt/env.sh
mkdir -p $OUT/gpu6 $OUT/dec6 $OUT/win6 $OUT/main $B
( timeout 200 bash scripts/gpu-bench.sh gen-tpch 10 > $OUT/main/gen10.log 2>&1; echo gen10 rc=$? >> $OUT/main/gen10.log;
  timeout 260 bash scripts/gpu-bench.sh gen-ssb 20 > $OUT/main/gen20.log 2>&1; echo gen20 rc=$? >> $OUT/main/gen20.log ) &
T="python3 -m pytest -q -m gpu --tb=short -rs -p no:cacheprovider"
timeout 150 $T tests/codec/test_codec_gpu.py tests/codec/test_gpu_compressed_kernels.py tests/backend/test_gpu_encoded_column.py \
  tests/backend/test_gpu_stream_batch.py tests/codec/test_gpu_string_pages.py > $OUT/dec6/gpu-tests.log 2>&1; echo dec6 rc=$?
timeout 200 $T -vv "tests/exec/test_gpu_compiled_rows.py::test_row_sinks_compiled_match_duckdb" \
  "tests/exec/test_shared_results.py::test_a_subplan_bound_twice_runs_once_on_the_gpu" \
  "tests/exec/test_kept_builds.py::test_tpch_with_kept_builds_on_the_gpu" > $OUT/gpu6/gpu-tests.log 2>&1; echo gpu6 rc=$?
timeout 150 $T tests/sql/test_sql_corpus.py -k "window or first_last or host_aggs or statistics" > $OUT/win6/gpu-corpus.log 2>&1; echo win6 rc=$?
wait; tail -1 $OUT/main/gen10.log $OUT/main/gen20.log
for f in $OUT/*/gpu-*.log; do echo "== $f"; grep -aE "^(FAILED|ERROR)|passed|failed" $f | tail -8; done
