. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/co13
# SSB SF 20 warm (fresh connection per run, pages in the pinned host tier), one process, per query:
# gpu (GPU only, first), split%14@16 (the back 14 of the fact scan's row groups reserved for 14 CPU
# workers started with the fact pipeline), -queued (the same started once the GPU's share is queued:
# the fixed trigger, not measured yet), auto (the cost model and its outcome guard decide), gpu@16
# (GPU only again, after: runs later in a process are faster), cpu-hot (CPU only, 16 threads, hot);
# answers compared with the first mode's. The summary: auto against the best of gpu, gpu@16, cpu-hot.
timeout 88 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q1.2,q1.3,q2.1,q3.1,q4.1 \
  --repeat 5 --modes gpu,split%14@16,split%14@16-queued,auto,gpu@16,cpu-hot --budget-s 66 --json $OUT/co13/final-table.json \
  > $OUT/co13/final-table.log 2>&1; echo table rc=$?; cut -c1-700 $OUT/co13/final-table.log | tail -16

