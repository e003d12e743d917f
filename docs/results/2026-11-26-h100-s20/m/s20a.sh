# session 20 call A: co-processing at HEAD (lighter feeder since s19): the table with forced splits, workers early/late
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
git log --oneline -1 2>/dev/null || cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader; nproc
gen ssb-sf20 ssb --sf 20
timeout -k 5 330 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --repeat 5 \
  --modes gpu,gpu-gil,auto,split%8-first,split%16-first,split%8-fact,split%16-fact-gil,cpu-hot --budget-s 300 --json $OUT/main/tableA.json \
  > $OUT/main/tableA.log 2>&1; echo table rc=$?; cut -c1-400 $OUT/main/tableA.log | tail -16; date
