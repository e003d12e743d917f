. ckpt/env.sh
mkdir -p $OUT
nvidia-smi --query-gpu=name,memory.total --format=csv
timeout 520 python3 -m pytest -q -m gpu --tb=short -rs -p no:cacheprovider --durations=15 \
  tests/sql tests/api tests/backend tests/differential/test_gpu_coprocess.py tests/differential/test_gpu_batches.py \
  tests/differential/test_gpu_compressed_cache.py tests/differential/test_routes.py \
  tests/exec/test_gpu_compiled_ext.py tests/exec/test_gpu_compiled_strings.py tests/exec/test_gpu_compiled_wide.py \
  tests/exec/test_shared_results.py > $OUT/start-gpu-tests.log 2>&1; echo pytest rc=$?
tail -40 $OUT/start-gpu-tests.log
