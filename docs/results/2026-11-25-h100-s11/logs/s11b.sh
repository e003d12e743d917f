# warm SSB investigation: why selective q1.2/q1.3/q3.x are slower warm than q1.1
. ckpt/env.sh
mkdir -p $OUT
( time timeout 200 python3 -m hetdb.cli.main generate ssb --sf 10 $B/ssb-sf10 ) > $OUT/gen.log 2>&1; tail -3 $OUT/gen.log
timeout 150 python3 -m hetdb.cli.main bench ssb --sf 10 --db $B/ssb-sf10 --device gpu --mode warm --repeat 3 \
  --vs duckdb --out /tmp/o/ssbw > $OUT/ssb10-warm.log 2>&1; echo bench rc=$?
cp /tmp/o/ssbw/results.json $OUT/ssb10-warm.json 2>/dev/null
grep -aE "q[0-9]\.|geomean" $OUT/ssb10-warm.log
timeout 150 python3 ckpt/warmprobe.py $B/ssb-sf10 ssb q1.1,q1.2,q1.3,q2.1,q3.1,q3.4,q4.1 > $OUT/warmprobe.log 2>&1; echo probe rc=$?
grep -aE "^q[0-9]" $OUT/warmprobe.log
