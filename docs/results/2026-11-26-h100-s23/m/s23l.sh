# session 23 call L: the warm outliers that are not collections: every run profiled, slow ones printed
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 240 python3 ckpt/outprobe.py $B/ssb-sf20 10 > $OUT/main/outprobe.log 2>&1; echo "probe rc=$?"
head -3 $OUT/main/outprobe.log | cut -c1-600; grep -c "=====" $OUT/main/outprobe.log; date
