# session 24 call G: SSB SF 50 co-processing table (gpu / cpu-hot / forced splits / auto), after the host merge fix
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; df -h /tmp | tail -1; free -g | head -2
gen ssb-sf50 ssb --sf 50
du -sh $B/ssb-sf50; date
timeout -k 5 420 python3 scripts/coprocess_warm_table.py $B/ssb-sf50 --queries q1.1,q1.2,q1.3,q2.1,q3.1,q3.3,q4.1 --repeat 5 --threads 16 --budget-s 400 \
  --modes gpu,cpu-hot,split%72@16-first,split%48@16-first,split%48@16,auto --json $OUT/main/table50.json > $OUT/main/table50.log 2>&1; echo "table rc=$?"
tail -14 $OUT/main/table50.log | cut -c1-220; date
