# session 21 call C: co-processing table with the compiled share (narrow copies)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nproc
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
timeout -k 5 330 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --repeat 7 \
  --modes gpu,split%24-first,split%24-first-busy,split%24@8-first,split%40-first,auto --budget-s 300 --json $OUT/main/tableC.json \
  > $OUT/main/tableC.log 2>&1; echo table rc=$?; cut -c1-400 $OUT/main/tableC.log | tail -16; date
