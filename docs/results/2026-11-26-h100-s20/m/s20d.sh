. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT
gen ssb-sf20 ssb --sf 20
L10=873683546
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 5 \
  --variant hot10:hot=1,gpu_memory_limit=$L10 --variant hot10noq:hot=1,gpu_memory_limit=$L10,qprio=0 \
  --variant w10:gpu_memory_limit=$L10 --variant w10noq:gpu_memory_limit=$L10,qprio=0 > $OUT/main/tlD.log 2>&1; echo tl rc=$?
grep -E "^q[0-9.]+ |^geomean" $OUT/main/tlD.log | cut -c1-130
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 200 ssb20-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L10
grep -E '^  q|geomean' $OUT/main/ssb20-l10.log | tail -28
