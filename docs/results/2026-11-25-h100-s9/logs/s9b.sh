. ckpt/env.sh
mkdir -p $B
( timeout 230 bash scripts/gpu-bench.sh gen-tpch 10 > $OUT/gen10.log 2>&1; echo gen10 rc=$? >> $OUT/gen10.log ) &
( timeout 100 bash scripts/gpu-bench.sh gen-tpch 1 > $OUT/gen1.log 2>&1; echo gen1 rc=$? >> $OUT/gen1.log ) &
timeout 500 bash scripts/gpu-check.sh tests/exec/test_gpu_compiled_paged.py tests/exec/test_gpu_compiled_rows.py \
  tests/exec/test_gpu_compiled.py tests/codec/test_codec_gpu.py tests/codec/test_gpu_compressed_kernels.py \
  tests/codec/test_gpu_string_pages.py tests/exec/test_gpu_exec.py tests/dist/test_gpu_shuffle.py \
  tests/dist/test_gpu_exchange.py tests/dist/test_dist_local.py > $OUT/gpu-tests-a.log 2>&1; echo tests rc=$?
wait
tail -3 $OUT/gen10.log $OUT/gen1.log
grep -E "passed|failed|FAILED|ERROR" $OUT/gpu-tests-a.log | tail -30
