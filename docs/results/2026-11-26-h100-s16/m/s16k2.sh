# session 16 checkpoint call 2 (same machine, data from call 1): TPC-H SF 10 warm on main
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
hb 200 tpch10-gpu-warm tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode warm --repeat 3 --vs duckdb
date
( cd $OUT && tar czf /tmp/k2.tgz * && rm -rf $OUT/* && mv /tmp/k2.tgz $OUT/ )
