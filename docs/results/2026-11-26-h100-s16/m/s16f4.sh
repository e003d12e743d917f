# final call 4 (merged main): the GPU test files F1's 170 s did not reach
. ckpt/env.sh; mkdir -p $OUT/main; date
timeout -k 5 290 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py > $OUT/main/tests-coprocess.log 2>&1; echo "coprocess rc=$?"; tail -6 $OUT/main/tests-coprocess.log | cut -c1-300
timeout -k 5 60 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_literal_kernels.py > $OUT/main/tests-literal.log 2>&1; echo "literal rc=$?"; tail -4 $OUT/main/tests-literal.log | cut -c1-300
date
