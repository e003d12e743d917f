. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket|Model name|NUMA node\(s\)|L3)" 
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q3.1,q4.1 --runs 5 --deliveries \
  --variant base: --variant tail5:tail=5 --variant s8f:gpu_coprocess=auto,split=8,first=1 > $OUT/main/tlB.log 2>&1; echo tl rc=$?
grep -E "^q[0-9.]+ |^geomean" $OUT/main/tlB.log | cut -c1-160
