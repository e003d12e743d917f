# final call 2 (merged main, nvCOMP carried): SSB SF 20 at unlimited / 10% / 25% / 50%, TPC-H SF 10 warm
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1; grep "^gen" $OUT/main/gen-ssb.log; ls -d $B/*
hb 100 ssb20-gpu ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 110 ssb20-gpu-l10 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 100 ssb20-gpu-l25 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
hb 50 ssb20-gpu-l50 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
[ -d $B/tpch-sf10 ] && hb 150 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode warm --repeat 3 --vs duckdb
date
( cd $OUT && tar czf /tmp/f2.tgz * && rm -rf $OUT/* && mv /tmp/f2.tgz $OUT/ )
