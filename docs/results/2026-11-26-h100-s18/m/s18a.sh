# after the final (main b8bac5c4): which merged change makes the small-budget admission test's q3.1 cache 2 pages; link14's defaults A/B again
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
for v in "" "@hetdb.exec.early_scan.FIRST_DELIVERIES=1 @hetdb.backend.gpu.stream_batch.PRIMED_RAMP=1" \
  "@hetdb.backend.gpu.copies.SORTED=False @hetdb.backend.gpu.copies.BATCH_CALL=False" "@hetdb.exec.early_scan.COLD_READ_AHEAD=False" \
  "@hetdb.backend.gpu.stream_io.CHECK_APART=False" "@hetdb.exec.early_scan.FACT_FIRST=False"; do
  timeout 60 python3 ckpt/budprobe.py $v 2>&1 | grep -E "q1.1|q3.1|Error" | tail -3
done | tee $OUT/main/budprobe.log
wait; grep "^gen" $OUT/main/gen-ssb.log; date
for i in 1 2; do
timeout 80 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 \
  --variant new: --variant old:copysort=0,copybatch=0,primedramp=1,firstdeliveries=1 \
  --variant ramp1:primedramp=1,firstdeliveries=1 --variant nocopy:copysort=0,copybatch=0 > $OUT/main/ab$i.log 2>&1; echo "ab$i rc=$?"
grep -E "^q|geomean" $OUT/main/ab$i.log | cut -c1-120
done; date
( cd $OUT && tar czf /tmp/a.tgz * && rm -rf $OUT/* && mv /tmp/a.tgz $OUT/ )
