# session 19 call D: warm-run outliers and gc
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader
gen ssb-sf20 ssb --sf 20
timeout 150 python3 ckpt/outlier.py $B/ssb-sf20 q3.1,q4.1,q1.1 25 > $OUT/main/outlier.log 2>&1; echo "rc=$?"; cat $OUT/main/outlier.log
timeout 150 python3 ckpt/outlier.py $B/ssb-sf20 q3.1,q4.1,q1.1 25 freeze > $OUT/main/outlier-freeze.log 2>&1; echo "rc=$?"; cat $OUT/main/outlier-freeze.log
date
( cd $OUT && tar czf /tmp/d.tgz * && rm -rf $OUT/* && mv /tmp/d.tgz $OUT/ )
