# session 23 call G: gc_pause A/B (warm, 13 queries, 10 rounds) and SSB SF 20 hot+warm at the final code, unlimited/10/25/50% with DuckDB
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 ckpt/gcprobe.py $B/ssb-sf20 10 > $OUT/main/gcprobe.log 2>&1; echo "probe rc=$?"
cut -c1-300 $OUT/main/gcprobe.log | head -30; date
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 130 ssb20-gpu $S --mode hot,warm --repeat 3 --vs duckdb
hb 130 ssb20-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 130 ssb20-l25 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
hb 130 ssb20-l50 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
rm -rf $OUT/main/ssb20-l25 $OUT/main/ssb20-l50 $OUT/main/ssb20-l10
date
