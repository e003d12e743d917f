# session 24 call D: the end of a forced split (finish_fused branch, CPU parts' keys, final merge)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
for q in q3.3 q2.1 q1.1 q4.1; do
timeout -k 5 100 python3 ckpt/coprobe2.py $B/ssb-sf20 $q 16 > $OUT/main/end-$q.log 2>&1; echo "$q rc=$?"; cut -c1-400 $OUT/main/end-$q.log | tail -30
done; date
