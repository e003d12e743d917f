# session 23 call E: SSB SF 20 hot+warm unlimited, 10%, 25%, 50% with DuckDB at the final code (PASS_PAGED on)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 130 ssb20-gpu $S --mode hot,warm --repeat 3 --vs duckdb
hb 130 ssb20-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 130 ssb20-l25 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
hb 130 ssb20-l50 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
rm -rf $OUT/main/ssb20-l25 $OUT/main/ssb20-l50
date
