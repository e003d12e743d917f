. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/co12
timeout 88 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q2.1,q3.1,q4.1,q1.1,q1.2,q1.3 \
  --repeat 5 --modes gpu,cpu-hot,auto,on --budget-s 55 --json $OUT/co12/final-table.json \
  > $OUT/co12/final-table.log 2>&1
echo "co12 table rc=$?"; tail -30 $OUT/co12/final-table.log

