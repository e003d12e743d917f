# final call 1: data, TPC-H SF 10 GPU hot + warm (issue 10, 9)
. ckpt/env.sh
mkdir -p $OUT/main $B
( timeout 250 python3 -m hetdb.cli.main generate tpch --sf 10 $B/tpch-sf10 > /dev/null 2>&1; echo gen tpch rc=$? ) &
( timeout 250 python3 -m hetdb.cli.main generate ssb --sf 10 $B/ssb-sf10 > /dev/null 2>&1; echo gen ssb rc=$? ) &
wait
timeout 320 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out /tmp/o/tpch-gpu > $OUT/main/tpch-gpu.log 2>&1; echo tpch gpu rc=$?
grep -aE "geomean" $OUT/main/tpch-gpu.log
