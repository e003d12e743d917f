# cold SSB SF 20 on the GPU (main ed754b0): OS page cache dropped / files evicted and the host tier emptied per run
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1; grep "^gen" $OUT/main/gen-ssb.log
hb 300 ssb20-gpu-cold ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode cold --repeat 2 --vs duckdb
grep -iE "ceiling|disk" $OUT/main/ssb20-gpu-cold.log | head -5
date
