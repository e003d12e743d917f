# start call B: TPC-H SF 10 GPU hot --no-reuse; TPC-H SF 10 CPU 16 threads (defaults: bushy/key memo off)
. ckpt/env.sh
mkdir -p $OUT/start
timeout 200 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 \
  --no-reuse --vs duckdb --out $OUT/start/tpch10-gpu-noreuse > $OUT/start/tpch10-gpu-noreuse.log 2>&1; echo tpch gpu rc=$?
grep -aE "geomean" $OUT/start/tpch10-gpu-noreuse.log
timeout 300 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device cpu --mode hot --repeat 3 \
  --threads 16 --vs duckdb --out $OUT/start/tpch10-cpu-t16 > $OUT/start/tpch10-cpu-t16.log 2>&1; echo tpch cpu rc=$?
grep -aE "geomean" $OUT/start/tpch10-cpu-t16.log
rm -f $OUT/start/*/*.png
