. ckpt/env.sh
mkdir -p $B
( timeout 230 bash scripts/gpu-bench.sh gen-tpch 10 > $OUT/gen10.log 2>&1; echo gen10 rc=$? >> $OUT/gen10.log ) &
timeout 520 bash scripts/gpu-check.sh tests/exec/test_gpu_compiled_paged.py \
  "tests/exec/test_gpu_compiled.py::test_hash_tables_kept_across_launches" tests/codec/test_codec_gpu.py \
  tests/codec/test_gpu_string_pages.py tests/codec/test_gpu_compressed_kernels.py tests/dist/test_dist_local.py \
  tests/exec/test_gpu_fusion.py tests/differential/test_tpch.py tests/differential/test_ssb.py > $OUT/gpu-tests-final.log 2>&1; echo tests rc=$?
wait
tail -n 2 $OUT/gen10.log
grep -aE "^(FAILED|ERROR)|passed|failed" $OUT/gpu-tests-final.log | tail -20
