# final call 1 (merged main): SSB SF 20 + TPC-H SF 10 generated while main's changed gpu tests run; then gpu10's and dec10's final blocks
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main $OUT/gpu10 $OUT/dec10 $OUT/warm10 $OUT/cpu10
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
timeout -k 5 170 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE \
  tests/backend/test_gpu_replay.py tests/exec/test_gpu_budget_admission.py tests/exec/test_gpu_early_scan.py \
  tests/codec/test_gpu_compressed_kernels.py tests/exec/test_gpu_compiled_paged.py tests/exec/test_gpu_literal_kernels.py \
  > $OUT/main/final-tests.log 2>&1; echo "main tests rc=$?"; tail -8 $OUT/main/final-tests.log | cut -c1-250
wait; cat $OUT/main/gen-*.log; date
timeout -k 5 155 bash ckpt/fin-gpu10.sh > $OUT/gpu10/final-stdout.log 2>&1; echo "gpu10 rc=$?"; tail -24 $OUT/gpu10/final-stdout.log | cut -c1-250
date
timeout -k 5 150 bash ckpt/fin-dec10.sh > $OUT/dec10/final-stdout.log 2>&1; echo "dec10 rc=$?"; tail -18 $OUT/dec10/final-stdout.log | cut -c1-250
date
( cd $OUT && tar czf /tmp/f1.tgz * && rm -rf $OUT/* && mv /tmp/f1.tgz $OUT/ )
