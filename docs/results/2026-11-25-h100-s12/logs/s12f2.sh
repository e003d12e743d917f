# final call 2: TPC-H SF 10 GPU hot+warm (issue 10, 9), CPU 16 threads (issue 11), window suite on the
# GPU (issue 14), the GPU fuzz step (issue 15)
. ckpt/env.sh
mkdir -p $OUT/main $OUT/rel8 $OUT/sql8
timeout 230 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out $OUT/main/tpch10-gpu > $OUT/main/tpch10-gpu.log 2>&1; echo tpch gpu rc=$?
grep -aE "geomean" $OUT/main/tpch10-gpu.log
timeout 200 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device cpu --mode hot --repeat 3 \
  --threads 16 --vs duckdb --out $OUT/main/tpch10-cpu-t16 > $OUT/main/tpch10-cpu-t16.log 2>&1; echo tpch cpu rc=$?
grep -aE "geomean" $OUT/main/tpch10-cpu-t16.log
rm -f $OUT/main/*/*.png
timeout -k 5 170 python3 -m hetdb.cli.main bench window --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 \
    --vs duckdb --out $OUT/sql8/window-gpu > $OUT/sql8/final-window-gpu.log 2>&1; echo "window gpu rc=$?"
grep -aE "geomean" $OUT/sql8/final-window-gpu.log
rm -f $OUT/*/*/*.png
( cd $OUT && tar czf /tmp/s12f2.tgz * && rm -rf $OUT/* && mv /tmp/s12f2.tgz $OUT/ )
ls -la $OUT
