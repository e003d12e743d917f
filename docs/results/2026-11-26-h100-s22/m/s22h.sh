# session 22 call H: the warm query's tail after its last fused launch (q1.1-q4.1)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 120 python3 ckpt/tail.py $B/ssb-sf20 q1.1,q2.1,q3.1,q4.1 12 > $OUT/main/tail.log 2>&1; echo "rc=$?"
grep "^===" $OUT/main/tail.log; date
