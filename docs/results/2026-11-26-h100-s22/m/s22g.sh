# session 22 call G: run-by-run alternating A/B of QUERY_PRIORITY (restored, off by default): warm unlimited, warm 25%, hot 10%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
M=hetdb.backend.gpu.stream_io:QUERY_PRIORITY
timeout -k 5 150 python3 ckpt/ab.py $B/ssb-sf20 8 $M on:warm:0:1 off:warm:0:0 > $OUT/main/ab-warm.log 2>&1; echo "rc=$?"; cat $OUT/main/ab-warm.log | cut -c1-300
timeout -k 5 150 python3 ckpt/ab.py $B/ssb-sf20 8 $M on25:warm:2184208865:1 off25:warm:2184208865:0 > $OUT/main/ab-l25.log 2>&1; echo "rc=$?"; cat $OUT/main/ab-l25.log | cut -c1-300
timeout -k 5 120 python3 ckpt/ab.py $B/ssb-sf20 8 $M on10h:hot:873683546:1 off10h:hot:873683546:0 > $OUT/main/ab-h10.log 2>&1; echo "rc=$?"; cat $OUT/main/ab-h10.log | cut -c1-300
timeout -k 5 100 python3 ckpt/ab.py $B/ssb-sf20 8 $M onh:hot:0:1 offh:hot:0:0 > $OUT/main/ab-hot.log 2>&1; echo "rc=$?"; cat $OUT/main/ab-hot.log | cut -c1-300
date
