# session 19 call C: cProfile of warm q3.1/q1.1/q2.1/q4.1 and hot-at-10% q3.1
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader
gen ssb-sf20 ssb --sf 20
timeout 250 python3 ckpt/cprof.py $B/ssb-sf20 q3.1,q1.1,q2.1,q4.1 5 > $OUT/main/cprof-warm.log 2>&1; echo "cprof rc=$?"
timeout 100 python3 ckpt/cprof.py $B/ssb-sf20 q3.1,q2.1 5 873683546 > $OUT/main/cprof-l10.log 2>&1; echo "cprof10 rc=$?"
grep '^===' $OUT/main/cprof-*.log
date
( cd $OUT && tar czf /tmp/c.tgz * && rm -rf $OUT/* && mv /tmp/c.tgz $OUT/ )
