. ckpt/env.sh
timeout 90 python3 -m hetdb.cli.main generate ssb --sf 5 /tmp/dec5-ssb5 > $OUT/gen-ssb5.log 2>&1; echo gen rc=$?
timeout 210 python3 scripts/gpu_compressed_cache.py /tmp/dec5-ssb5 --sf 5 --repeat 5 > $OUT/compressed-cache.log 2>&1; echo cc rc=$?
timeout 270 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 --vs duckdb --out $OUT/tpch-gpu-hot > $OUT/tpch-gpu-hot.log 2>&1; echo tpch rc=$?
tail -22 $OUT/compressed-cache.log; tail -26 $OUT/tpch-gpu-hot.log
