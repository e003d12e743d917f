# session 22 call A: why warm runs under a budget are slower: cProfile diff of warm q1.1 (unlimited vs 50% vs 10%) and timelines
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
gen ssb-sf20 ssb --sf 20
timeout -k 5 150 python3 ckpt/wdiff.py $B/ssb-sf20 q1.1 6 base: l50:gpu_memory_limit=4368417732 l10:gpu_memory_limit=873683546 > $OUT/main/wdiff-q11.log 2>&1; echo "wdiff rc=$?"
grep "^==" $OUT/main/wdiff-q11.log
timeout -k 5 120 python3 ckpt/wdiff.py $B/ssb-sf20 q3.1 5 base: l50:gpu_memory_limit=4368417732 > $OUT/main/wdiff-q31.log 2>&1; echo "wdiff rc=$?"
grep "^==" $OUT/main/wdiff-q31.log
timeout -k 5 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 5 --deliveries --variant first: --variant base: \
  --variant l50:gpu_memory_limit=4368417732 --variant l25:gpu_memory_limit=2184208865 > $OUT/main/budget-tl.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/budget-tl.log | cut -c1-200; date
