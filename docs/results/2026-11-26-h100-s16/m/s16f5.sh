# final call 5 (merged main dff5219): SSB SF 20 hot with 7 timed runs (the steady hot replay), TPC-H SF 10 hot
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
hb 80 ssb20-gpu-r7 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 7 --vs duckdb
hb 150 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 5 --vs duckdb
date
( cd $OUT && tar czf /tmp/f5.tgz * && rm -rf $OUT/* && mv /tmp/f5.tgz $OUT/ )
