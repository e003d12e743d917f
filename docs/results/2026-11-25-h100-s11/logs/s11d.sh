. ckpt/env.sh
mkdir -p $OUT
timeout 200 python3 -m hetdb.cli.main generate ssb --sf 10 $B/ssb-sf10 > /dev/null 2>&1; echo gen rc=$?
Q=q1.1,q1.3,q2.1,q3.4,q4.1
v() { n=$1; shift; timeout 90 python3 ckpt/warmprobe.py $B/ssb-sf10 ssb $Q "$@" > $OUT/v-$n.log 2>&1; echo "== $n $* rc=$?"; grep -aE "^q[0-9]" $OUT/v-$n.log; }
v base
HETDB_NO_WARM_FILL=1 v nofill
v copy256 route=copy gpu_batch_bytes=268435456
v copy16 route=copy gpu_batch_bytes=16777216
v comp gpu_compressed_cache=true
timeout 60 python3 ckpt/warmprof.py $B/ssb-sf10 ssb q1.1 route=copy > $OUT/prof-copy.log 2>&1; head -1 $OUT/prof-copy.log
