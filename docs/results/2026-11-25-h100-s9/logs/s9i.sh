. ckpt/env.sh
timeout 400 bash scripts/gpu-check.sh tests/exec/test_gpu_fusion.py tests/differential/test_ssb.py tests/differential/test_tpch.py \
  tests/dist/test_dist_local.py tests/exec/test_gpu_compiled_paged.py > $OUT/gpu-tests-fix.log 2>&1; echo tests rc=$?
grep -aE "^(FAILED|ERROR)|passed|failed|^E  " $OUT/gpu-tests-fix.log | tail -20
