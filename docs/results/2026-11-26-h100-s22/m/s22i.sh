# session 22 call I: QUERY_PRIORITY (restored, off) A/B in blocks of 5 consecutive runs (the slow stretches), warm unlimited and 25%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
M=hetdb.backend.gpu.stream_io:QUERY_PRIORITY
timeout -k 5 200 python3 ckpt/ab.py $B/ssb-sf20 4x5 $M on:warm:0:1 off:warm:0:0 > $OUT/main/ab-warm-blocks.log 2>&1; echo "rc=$?"; cut -c1-300 $OUT/main/ab-warm-blocks.log
timeout -k 5 200 python3 ckpt/ab.py $B/ssb-sf20 4x5 $M on25:warm:2184208865:1 off25:warm:2184208865:0 > $OUT/main/ab-l25-blocks.log 2>&1; echo "rc=$?"; cut -c1-300 $OUT/main/ab-l25-blocks.log
date
