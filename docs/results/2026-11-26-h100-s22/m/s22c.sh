# session 22 call C: per-thread CPU of warm runs in the slow mode (l25 paged vs base)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 ckpt/thr.py $B/ssb-sf20 q2.1,q3.1,q4.1 5 2 l25:gpu_memory_limit=2184208865 base: l25b:gpu_memory_limit=2184208865 l10:gpu_memory_limit=873683546 > $OUT/main/thr.log 2>&1; echo "thr rc=$?"
cut -c1-900 $OUT/main/thr.log; date
