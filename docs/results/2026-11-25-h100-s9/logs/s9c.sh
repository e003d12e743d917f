. ckpt/env.sh
timeout 130 python3 scripts/gpu_hot_probe.py $B/tpch-sf10 --queries q11,q02,q16 --runs 8 --connections 2 --streamed > $OUT/hot-probe.log 2>&1; echo probe rc=$?
timeout 120 python3 scripts/gpu_decode_scan.py --rows 120e6 --repeat 10 > $OUT/decode-scan.log 2>&1; echo dscan rc=$?
timeout 120 python3 scripts/gpu_shuffle_bench.py $B/tpch-sf1 --parts 2 4 8 --repeat 5 > $OUT/shuffle-bench.log 2>&1; echo shuf rc=$?
timeout 170 bash scripts/gpu-bench.sh tpch-cpu-t 10 16 > $OUT/tpch-cpu-t16.log 2>&1; echo cpu rc=$?
tail -12 $OUT/decode-scan.log; tail -8 $OUT/shuffle-bench.log; grep -i "geomean\|speed" $OUT/tpch-cpu-t16.log | tail -3
