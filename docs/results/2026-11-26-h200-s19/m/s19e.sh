. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader
gen ssb-sf20 ssb --sf 20
timeout 200 python3 ckpt/outlier.py $B/ssb-sf20 q3.2,q3.1 50 > $OUT/main/outlier.log 2>&1; echo "rc=$?"; cat $OUT/main/outlier.log | cut -c1-1200
( cd $OUT && tar czf /tmp/e.tgz * && rm -rf $OUT/* && mv /tmp/e.tgz $OUT/ )
