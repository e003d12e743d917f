# final call 1 (merged main): SSB SF 20 + TPC-H SF 10 generated while main's GPU tests run; then gpu11, warm11, co11 final blocks
. ckpt/env.sh; . ckpt/s15lib.sh; mkdir -p $OUT/main $OUT/gpu11 $OUT/warm11 $OUT/co11
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
timeout -k 5 150 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE $(cat ckpt/final-tests.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "main tests rc=$?"; tail -8 $OUT/main/final-tests.log | cut -c1-250
wait; cat $OUT/main/gen-*.log; date
for n in gpu11 warm11 co11; do
  timeout -k 5 98 bash ckpt/fin-$n.sh > $OUT/$n/final-stdout.log 2>&1; echo "$n rc=$?"; tail -22 $OUT/$n/final-stdout.log | cut -c1-220; date
done
( cd $OUT && tar czf /tmp/f1.tgz * && rm -rf $OUT/* && mv /tmp/f1.tgz $OUT/ )
