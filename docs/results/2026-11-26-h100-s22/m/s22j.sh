# session 22 call J: GPU tests at the final code (7a9e66a9+)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 400 python3 -m pytest -q -x -p no:cacheprovider tests/differential/test_gpu_paged_parts.py tests/backend/test_paged_parts.py tests/backend/test_gpu_stream_batch.py tests/backend/test_stream_batch_cpu.py tests/differential/test_gpu_compressed_cache.py tests/exec/test_gpu_decoded_placement.py tests/exec/test_gpu_budget_admission.py tests/exec/test_gpu_resident_split.py tests/exec/test_gpu_compiled_paged.py tests/exec/test_gpu_zero_copy.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; tail -3 $OUT/main/tests.log
date
