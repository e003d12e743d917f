# final call 3 (merged main): TPC-H SF 10 warm; SSB SF 50 at 10% (of 2.5x plain SF 20) hot+warm and unlimited warm
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date; df -h /tmp | tail -1
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1; grep -h "^gen" $OUT/main/gen-tpch.log
hb 140 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode warm --repeat 3 --vs duckdb
( gen ssb-sf50 ssb --sf 50 ) > $OUT/main/gen-ssb50.log 2>&1; grep -h "^gen" $OUT/main/gen-ssb50.log; date
hb 200 ssb50-gpu-l10 ssb --sf 50 --db $B/ssb-sf50 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
date

