# session 16 first run: GPU tests of main with reasons
source ckpt/env.sh
mkdir -p $OUT/t
nvidia-smi --query-gpu=name,memory.total --format=csv > $OUT/t/gpu.txt 2>&1
timeout -k 5 200 python3 -m pytest -p no:cacheprovider -q -rfE --tb=short tests/exec/test_gpu_decoded_placement.py > $OUT/t/placement.log 2>&1; echo "placement rc=$?"; tail -5 $OUT/t/placement.log
timeout -k 5 300 python3 -m pytest -p no:cacheprovider -q -rfE --tb=short $(grep -v decoded_placement ckpt/final-tests.txt) > $OUT/t/others.log 2>&1; echo "others rc=$?"; tail -8 $OUT/t/others.log
