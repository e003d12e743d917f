# call 6 (main ab25015: the co-processing guard's second run alone): auto vs GPU-only warm on SSB SF 20
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1; grep "^gen" $OUT/main/gen-ssb.log
timeout 100 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q1.2,q1.3,q4.1 --repeat 7 \
  --modes gpu,auto --budget-s 90 > $OUT/main/co-guard.log 2>&1; echo "table rc=$?"; tail -12 $OUT/main/co-guard.log | cut -c1-300
date
