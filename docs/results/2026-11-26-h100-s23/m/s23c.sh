# session 23 call C: cProfile of warm runs' early scans (q4.2, q3.3 unlimited; q4.2 at 10%)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
for a in "q4.2 8" "q3.3 8" "q4.2 8 gpu_memory_limit=873683546"; do
  timeout -k 5 100 python3 ckpt/eprof.py $B/ssb-sf20 $a > "$OUT/main/eprof-${a// /_}.log" 2>&1; echo "eprof $a rc=$?"; done
date
