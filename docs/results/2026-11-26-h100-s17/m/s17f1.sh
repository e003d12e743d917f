# final call 1 (merged main): SSB SF 20 + TPC-H SF 10 generated while main's GPU tests run; then the helpers' final blocks
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main $OUT/tail13 $OUT/budget13 $OUT/co13
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
timeout -k 5 ${TEST_T:-240} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE $(cat ckpt/final-tests17.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "main tests rc=$?"; tail -8 $OUT/main/final-tests.log | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
for n in tail13 budget13 co13; do
  timeout -k 5 95 bash ckpt/fin-$n.sh > $OUT/$n/final-stdout.log 2>&1; echo "$n rc=$?"; tail -14 $OUT/$n/final-stdout.log | cut -c1-250; date
done
( cd $OUT && tar czf /tmp/f1.tgz * && rm -rf $OUT/* && mv /tmp/f1.tgz $OUT/ )
