# session 23 call J: pass-through scans decoding on arrival only the placement's slow-to-decode columns (PASS_DECODE_COST 6: rle, delta) vs none (inf), at 25% and 50%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
L25=2184208865; L50=4368417732
timeout -k 5 300 python3 ckpt/ab.py $B/ssb-sf20 4 hetdb.exec.operators.scan_device:PASS_DECODE_COST \
  l25inf:warm:$L25:999 l25rle:warm:$L25:6 l50inf:warm:$L50:999 l50rle:warm:$L50:6 > $OUT/main/ab.log 2>&1; echo "ab rc=$?"
cut -c1-400 $OUT/main/ab.log | tail -6; date
