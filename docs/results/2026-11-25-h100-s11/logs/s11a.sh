# start of session 11: gpu-marked tests not run on a GPU in session 10
. ckpt/env.sh
mkdir -p $OUT
nvidia-smi --query-gpu=name,memory.total --format=csv
P="python3 -m pytest -q -m gpu --tb=short -rs -p no:cacheprovider --durations=8"
timeout 150 $P tests/exec/test_gpu_compiled_ext.py tests/exec/test_gpu_compiled_strings.py tests/exec/test_gpu_compiled_wide.py > $OUT/g1-compiled.log 2>&1; echo g1 rc=$?; tail -3 $OUT/g1-compiled.log
timeout 150 $P tests/differential/test_routes.py tests/differential/test_gpu_compressed_cache.py tests/differential/test_gpu_batches.py > $OUT/g2-routes.log 2>&1; echo g2 rc=$?; tail -3 $OUT/g2-routes.log
timeout 120 $P tests/exec/test_gpu_exec.py tests/backend/test_gpu_replay.py tests/codec/test_gpu_string_pages.py tests/backend/test_gpu_stream_batch.py > $OUT/g3-exec.log 2>&1; echo g3 rc=$?; tail -3 $OUT/g3-exec.log
timeout 120 $P tests/dist > $OUT/g4-dist.log 2>&1; echo g4 rc=$?; tail -3 $OUT/g4-dist.log
grep -aE "^(FAILED|ERROR)" $OUT/g*.log | head -40
