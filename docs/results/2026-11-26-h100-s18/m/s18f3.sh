# final call 3 (merged main, nvCOMP carried): the helpers' final blocks (cold bench, co-processing table, warm timeline)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1; grep "^gen" $OUT/main/gen-ssb.log
for n in "$@"; do mkdir -p $OUT/$n
  timeout -k 5 ${STEP_T:-95} bash ckpt/fin-$n.sh > $OUT/$n/final-stdout.log 2>&1; echo "$n rc=$?"; tail -16 $OUT/$n/final-stdout.log | cut -c1-300; date
done
( cd $OUT && tar czf /tmp/f3.tgz * && rm -rf $OUT/* && mv /tmp/f3.tgz $OUT/ )
