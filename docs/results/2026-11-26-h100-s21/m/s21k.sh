# session 21 call K: why warm runs under a budget are slower than unlimited ones: warm timelines with deliveries, unlimited vs 50% vs 10%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q3.1 --runs 5 --deliveries --variant first: --variant base: \
  --variant l50:gpu_memory_limit=4368417732 --variant l10:gpu_memory_limit=873683546 > $OUT/main/budget-tl.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/budget-tl.log | cut -c1-260; date
