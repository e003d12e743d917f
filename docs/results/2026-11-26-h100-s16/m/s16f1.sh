# final call 1 (merged main): SSB SF 20 + TPC-H SF 30 generated while main's GPU tests run; then co12, gpu12 final blocks
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main $OUT/co12 $OUT/gpu12
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf30 tpch --sf 30 ) > $OUT/main/gen-tpch.log 2>&1 &
timeout -k 5 ${TEST_T:-150} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE $(cat ckpt/final-tests16.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "main tests rc=$?"; tail -8 $OUT/main/final-tests.log | cut -c1-250
while [ ! -d $B/ssb-sf20 ]; do sleep 2; done; cat $OUT/main/gen-ssb.log; date
for n in co12 gpu12; do
  timeout -k 5 95 bash ckpt/fin-$n.sh > $OUT/$n/final-stdout.log 2>&1; echo "$n rc=$?"; tail -22 $OUT/$n/final-stdout.log | cut -c1-220; date
done
wait; cat $OUT/main/gen-*.log; date
( cd $OUT && tar czf /tmp/f1.tgz * && rm -rf $OUT/* && mv /tmp/f1.tgz $OUT/ )
