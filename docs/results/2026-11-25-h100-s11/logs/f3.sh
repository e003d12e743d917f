# final call 3: fuzz campaign step on 16 cores (CPU + GPU configurations), gpu7 tests
. ckpt/env.sh
mkdir -p $OUT/fuzz7 $OUT/gpu7 $OUT/cpu7
timeout 190 python3 scripts/cpu_switches_ab.py /tmp/hetdb-bench/tpch-sf10 16 > $OUT/cpu7/final-switches-ab.log 2>&1; echo ab rc=$?
tail -15 $OUT/cpu7/final-switches-ab.log
timeout 45 python3 -m pytest -q -p no:cacheprovider tests/exec/test_gpu_compiled_fold.py > $OUT/gpu7/tests.log 2>&1; echo fold tests rc=$?; tail -2 $OUT/gpu7/tests.log
D=/tmp/fuzz7-step1
( timeout -k 15 200 python3 tests/differential/fuzz_main.py --dir $D --seed 20261125 --queries 100000 \
      --cases 0:80000 --device all --jobs 16 --gpu-jobs 6 --seconds 150
  echo "fuzz rc=$?"
  echo "==== summary.txt"; cat $D/summary.txt
  echo "==== failures.txt"; cat $D/failures.txt 2>/dev/null | head -c 200000 ) > $OUT/fuzz7/step1.log 2>&1
cp $D/results.jsonl $OUT/fuzz7/step1-results.jsonl
tail -25 $OUT/fuzz7/step1.log
