# session 24 call J: SSB SF 50 hot+warm with DuckDB, unlimited and at 10% (2,184,208,865 B: 10% of 2.5x plain SF 20's size, as session 17)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf50 ssb --sf 50
S="ssb --sf 50 --db $B/ssb-sf50 --device gpu"
hb 280 ssb50-gpu $S --mode hot,warm --repeat 3 --vs duckdb
grep -E '^  q' $OUT/main/ssb50-gpu.log | tail -26 | cut -c1-160; date
hb 280 ssb50-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
grep -E '^  q' $OUT/main/ssb50-l10.log | tail -26 | cut -c1-160; date
