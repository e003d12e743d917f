# session 23 call B: the machine's CPU topology; warm timelines of the budget-slow queries (q3.x, q4.2) at 10% / 25% / unlimited
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
lscpu > $OUT/main/lscpu.log 2>&1; grep -E "^CPU\(s\)|Thread|Core|Socket|Model name|NUMA|L3" $OUT/main/lscpu.log
gen ssb-sf20 ssb --sf 20
timeout -k 5 240 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.1,q3.3,q3.4,q4.2,q1.1 --runs 5 --deliveries --variant first: --variant base: \
  --variant l25:gpu_memory_limit=2184208865 --variant l10:gpu_memory_limit=873683546 > $OUT/main/budget-tl.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/budget-tl.log | cut -c1-200; date
