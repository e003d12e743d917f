# session 24 call A: where a forced split's time goes (warm timeline per delivery, base vs split 16/32 on 14 workers started with the first delivery); the table: gpu / cpu-hot / splits / memory load
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nproc
gen ssb-sf20 ssb --sf 20
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q3.3,q2.1 --runs 5 --deliveries \
  --variant base:gpu_coprocess=off --variant s16:gpu_coprocess=auto,split=16,first=1 --variant s32:gpu_coprocess=auto,split=32,first=1 > $OUT/main/tl.log 2>&1; echo "tl rc=$?"
grep -E "^(q|  fact|.*median)" $OUT/main/tl.log | cut -c1-200 | head -40; date
timeout -k 5 200 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q1.3,q3.3,q2.3 --repeat 5 --threads 16 \
  --modes gpu,cpu-hot,split%16@16-first,split%32@16-first,gpu-load8,gpu-load15 --json $OUT/main/table.json > $OUT/main/table.log 2>&1; echo "table rc=$?"
tail -8 $OUT/main/table.log | cut -c1-200; date
