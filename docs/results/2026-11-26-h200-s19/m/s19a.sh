# session 19 call A: where warm q3.x's time goes in the bench (23-26 ms there, 17.5 in warm_timeline alone),
# and the 10% hot q3.1 gap (25 ms in the bench, 9 alone); baseline bench at main
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
gen ssb-sf20 ssb --sf 20
L10=873683546
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 240 w-all $S --mode warm --repeat 3 --vs duckdb
hb 120 w-q31 $S --mode warm --repeat 5 --vs duckdb --queries q3.1
hb 120 w-q23q31 $S --mode warm --repeat 5 --vs duckdb --queries q2.3,q3.1,q3.2
hb 120 w-q31q23 $S --mode warm --repeat 5 --vs duckdb --queries q3.1,q2.3,q3.1
grep -E '^  q' $OUT/main/w-*.log
hb 200 l10-all $S --mode hot --repeat 3 --vs duckdb --gpu-memory-limit $L10
hb 120 l10-q31 $S --mode hot --repeat 5 --vs duckdb --queries q3.1 --gpu-memory-limit $L10
grep -E '^  q3' $OUT/main/l10-*.log
timeout 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.1,q2.1 --runs 5 --deliveries > $OUT/main/tl-q31.log 2>&1; echo "tl rc=$?"
grep -E '^q' $OUT/main/tl-q31.log | cut -c1-700
date
( cd $OUT && tar czf /tmp/a.tgz * && rm -rf $OUT/* && mv /tmp/a.tgz $OUT/ )
