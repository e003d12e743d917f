. ckpt/env.sh
mkdir -p $OUT
timeout 200 python3 -m hetdb.cli.main generate ssb --sf 10 $B/ssb-sf10 > /dev/null 2>&1; echo gen rc=$?
timeout 60 python3 ckpt/warmprof.py $B/ssb-sf10 ssb q1.1 > $OUT/prof-q11.log 2>&1; echo p1 rc=$?; head -1 $OUT/prof-q11.log
timeout 60 python3 ckpt/warmprof.py $B/ssb-sf10 ssb q3.4 > $OUT/prof-q34.log 2>&1; echo p2 rc=$?; head -1 $OUT/prof-q34.log
for v in route=copy gpu_compressed_cache=true gpu_batch_bytes=268435456; do
  timeout 90 python3 ckpt/warmprobe.py $B/ssb-sf10 ssb q1.1,q1.3,q2.1,q3.4,q4.1 $v > $OUT/variant-$v.log 2>&1; echo $v rc=$?
  grep -aE "^q[0-9]" $OUT/variant-$v.log
done
