# session 24 call H: SSB SF 50, "auto" with its workers started once the first delivery is queued (a clean process: no forced split teaching it), against the GPU alone
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf50 ssb --sf 50
timeout -k 5 400 python3 scripts/coprocess_warm_table.py $B/ssb-sf50 --queries q1.1,q1.2,q1.3,q2.1,q3.3,q4.1 --repeat 9 --threads 16 --budget-s 380 \
  --modes gpu,auto-first --json $OUT/main/auto50.json > $OUT/main/auto50.log 2>&1; echo "table rc=$?"
tail -12 $OUT/main/auto50.log | cut -c1-220; date
