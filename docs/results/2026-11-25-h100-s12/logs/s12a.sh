# start call A: data (TPC-H SF 10, SSB SF 20), SSB SF 20 GPU hot+warm vs DuckDB at main
. ckpt/env.sh
mkdir -p $OUT/start $B
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
git log --oneline -1 2>/dev/null || true
( timeout 330 python3 -m hetdb.cli.main generate tpch --sf 10 $B/tpch-sf10 > $OUT/start/gen-tpch.log 2>&1; echo gen tpch rc=$? ) &
( timeout 330 python3 -m hetdb.cli.main generate ssb --sf 20 $B/ssb-sf20 > $OUT/start/gen-ssb.log 2>&1; echo gen ssb rc=$? ) &
wait
date
timeout 220 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out $OUT/start/ssb20-gpu > $OUT/start/ssb20-gpu.log 2>&1; echo ssb gpu rc=$?
grep -aE "geomean" $OUT/start/ssb20-gpu.log
rm -f $OUT/start/ssb20-gpu/*.png
