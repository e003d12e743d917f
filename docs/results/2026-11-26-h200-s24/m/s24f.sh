# session 24 call F: co-processing table after the host merge fix: gpu / auto / forced splits (workers, start) on all 13 SSB SF 20 queries
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 400 python3 scripts/coprocess_warm_table.py $B/ssb-sf20 --repeat 5 --threads 16 --budget-s 380 \
  --modes gpu,auto,split%16@16-first,split%16@8-first,split%8@8,split%24@16 --json $OUT/main/table.json > $OUT/main/table.log 2>&1; echo "table rc=$?"
tail -18 $OUT/main/table.log | cut -c1-200; date
