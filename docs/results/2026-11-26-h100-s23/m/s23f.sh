# session 23 call F: warm outliers against Python's cyclic collector (gc callbacks; gc disabled around each query)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 240 python3 ckpt/gcprobe.py $B/ssb-sf20 8 > $OUT/main/gcprobe.log 2>&1; echo "probe rc=$?"
cut -c1-300 $OUT/main/gcprobe.log | head -40; date
