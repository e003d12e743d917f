# session 21 call J: SSB SF 20 at 25% and 50% of the data (hot+warm) with DuckDB, final commit
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
L25=2184208865; L50=4368417732  # 25% and 50% of SSB SF 20 uncompressed (as sessions 16-20)
hb 150 ssb20-l25 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L25
hb 150 ssb20-l50 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L50
hb 100 ssb20-hot $S --mode hot --repeat 3 --vs none
date
