# final call 3 (merged main): TPC-H SF 30 GPU hot and warm vs DuckDB
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date; df -h /tmp | tail -1; free -g | head -2
hb ${T3:-400} tpch30-gpu tpch --sf 30 --db $B/tpch-sf30 --device gpu --mode hot,warm --repeat 3 --vs duckdb
date
( cd $OUT && tar czf /tmp/f3.tgz * && rm -rf $OUT/* && mv /tmp/f3.tgz $OUT/ )
