# final part 2: GPU benches (TPC-H SF 10 hot+warm, SSB SF 20 hot+warm), TPC-H CPU 16 threads
. ckpt/env.sh
mkdir -p $OUT/main $OUT/cpu6
[ -d $B/tpch-sf10 ] || timeout 200 bash scripts/gpu-bench.sh gen-tpch 10 > /dev/null 2>&1
[ -d $B/ssb-sf20 ] || timeout 260 bash scripts/gpu-bench.sh gen-ssb 20 > /dev/null 2>&1
OUT= timeout 230 bash scripts/gpu-bench.sh tpch-gpu 10 > $OUT/main/tpch-gpu.log 2>&1; echo tpch-gpu rc=$?
OUT= timeout 180 bash scripts/gpu-bench.sh ssb-gpu 20 > $OUT/main/ssb-gpu.log 2>&1; echo ssb-gpu rc=$?
OUT= timeout 170 bash scripts/gpu-bench.sh tpch-cpu-t 10 16 > $OUT/cpu6/tpch-cpu-t16-final.log 2>&1; echo tpch-cpu rc=$?
grep -aE "geomean" $OUT/main/*.log $OUT/cpu6/*.log
