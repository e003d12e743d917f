. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/co14
timeout 88 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --repeat 5 \
  --modes gpu,auto,split%6@8,gpu@16,cpu-hot --budget-s 62 --json $OUT/co14/final-table.json \
  > $OUT/co14/final-table.log 2>&1; echo table rc=$?; cut -c1-600 $OUT/co14/final-table.log | tail -14
