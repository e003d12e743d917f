# session 21 call L: is the early scan's priming room what slows warm runs under a budget? q1.1/q4.1 at 50% with earlyshare 0.6 (default) vs 1.0
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q4.1 --runs 5 --deliveries --variant first: --variant base: \
  --variant l50:gpu_memory_limit=4368417732 --variant l50e1:gpu_memory_limit=4368417732,earlyshare=1.0 \
  --variant l50e03:gpu_memory_limit=4368417732,earlyshare=0.3 > $OUT/main/budget-tl2.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/budget-tl2.log | cut -c1-200; date
