# session 24 call B: main-thread profile of forced splits (q3.3, q2.1, q1.1; 16 row groups, workers after the first delivery)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
for q in q3.3 q2.1 q1.1; do
timeout -k 5 150 python3 ckpt/coprobe.py $B/ssb-sf20 $q 4 16 first > $OUT/main/prof-$q.log 2>&1; echo "$q rc=$?"; grep "^==" $OUT/main/prof-$q.log
done; date
