# session 22 call F: q3.x at 25% warm: timeline and a second bench (8093bff1+)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 100 ssb20-l25w $S --mode warm --repeat 5 --vs duckdb --gpu-memory-limit 2184208865
timeout -k 5 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.1,q3.2,q3.3,q3.4 --runs 5 --deliveries --variant first: \
  --variant l25:gpu_memory_limit=2184208865 --variant base: --variant l10:gpu_memory_limit=873683546 > $OUT/main/q3-tl.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/q3-tl.log | cut -c1-150; date
hb 100 ssb20-gpu2 $S --mode warm --repeat 5 --vs duckdb
