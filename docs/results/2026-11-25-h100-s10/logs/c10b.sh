# checkpoint part 2: TPC-H SF 10 GPU hot (gpu6), hot probe, window suite GPU (win6), TPC-H CPU 16 threads (cpu6)
. ckpt/env.sh
mkdir -p $OUT/gpu6 $OUT/win6 $OUT/cpu6
[ -d $B/tpch-sf10 ] || timeout 240 bash scripts/gpu-bench.sh gen-tpch 10 > /dev/null 2>&1
timeout 200 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 \
  --vs duckdb --out $OUT/gpu6/tpch-hot > $OUT/gpu6/tpch-hot.log 2>&1; echo bench rc=$?
timeout 100 python3 scripts/gpu_hot_probe.py $B/tpch-sf10 --queries q02,q11,q22 --runs 5 --warmup 2 \
  --connections 2 --cprofile 1 --top 20 > $OUT/gpu6/probe.log 2>&1; echo probe rc=$?
OUT= timeout 130 bash scripts/gpu-bench.sh window-gpu 10 > $OUT/win6/window-gpu.log 2>&1; echo window rc=$?
OUT= timeout 170 bash scripts/gpu-bench.sh tpch-cpu-t 10 16 > $OUT/cpu6/tpch-cpu-t16.log 2>&1; echo tpch-cpu rc=$?
cp -r /tmp/hetdb-bench-out/window-gpu-sf10 $OUT/win6/ 2>/dev/null; cp -r /tmp/hetdb-bench-out/tpch-cpu-sf10-t16 $OUT/cpu6/ 2>/dev/null
grep -aE "geomean" $OUT/*/tpch-hot.log $OUT/win6/window-gpu.log $OUT/cpu6/tpch-cpu-t16.log
