# final call 1 (merged main, no nvCOMP carried: LZ4 string pages decoded on the host): SSB SF 20 + TPC-H SF 10 generated
# while the GPU tests run (the TPC-H fixtures need tpchgen-cli, carried in this call)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
timeout -k 5 ${TEST_T:-420} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=15 $(cat ckpt/final-tests18.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "main tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/final-tests.log | tail -12 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
( cd $OUT && tar czf /tmp/f1.tgz * && rm -rf $OUT/* && mv /tmp/f1.tgz $OUT/ )
