# session 19 final call 2 (merged main, same machine while held): SSB SF 20 at 10% (hot, warm) and 50% (hot) of the data,
# TPC-H SF 10 warm
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader
gen ssb-sf20 ssb --sf 20; gen tpch-sf10 tpch --sf 10
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 150 ssb20-gpu-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 80 ssb20-gpu-l50 $S --mode hot --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
hb 200 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode warm --repeat 3 --vs duckdb
rm -f $OUT/main/*/*.png; date
( cd $OUT && tar czf /tmp/f2.tgz * && rm -rf $OUT/* && mv /tmp/f2.tgz $OUT/ )
