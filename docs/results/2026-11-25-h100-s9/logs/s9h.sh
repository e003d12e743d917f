. ckpt/env.sh
timeout 90 python3 scripts/gpu_decode_scan.py --rows 60e6 --repeat 5 > $OUT/decode-scan-60m.log 2>&1; echo dscan rc=$?
timeout 240 bash scripts/gpu-bench.sh tpch-gpu 10 > $OUT/tpch-gpu.log 2>&1; echo tpch rc=$?
timeout 120 python3 ckpt/cpuvariants.py $B/tpch-sf10 16 q02,q11,q13,q15 > $OUT/cpuvariants.log 2>&1; echo var rc=$?
timeout 140 bash scripts/gpu-bench.sh tpch-cpu-t 10 16 > $OUT/tpch-cpu-t16.log 2>&1; echo cpu rc=$?
tail -9 $OUT/decode-scan-60m.log; grep -E "geomean" $OUT/tpch-gpu.log; cat $OUT/cpuvariants.log; grep -E "geomean" $OUT/tpch-cpu-t16.log
