# measurement call 2: issue 8 cold compressed vs none; issue 8/9 budget 10% compressed vs none
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main; date
hb 200 ssb20-gpu-cold ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode cold --repeat 3 --vs duckdb
hb 200 ssb20-gpu-none-cold ssb --sf 20 --db $B/ssb-sf20-none --device gpu --mode cold --repeat 3 --vs duckdb
L=$(limit_of 0.1); echo "limit 10% = $L"
hb 150 ssb20-gpu-l10 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L
hb 150 ssb20-gpu-none-l10 ssb --sf 20 --db $B/ssb-sf20-none --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L
date
