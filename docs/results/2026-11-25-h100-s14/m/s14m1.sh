# measurement call 1 (main 6835838): SSB SF 20 compressed and plain data sets; issue 8 SSB hot/warm compressed vs none
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date
gen ssb-sf20 ssb --sf 20 & gen ssb-sf20-none ssb --sf 20 --compression none & wait
date
python3 scripts/codec_ratios.py $B/ssb-sf20 ssb > $OUT/main/ratios-ssb20.txt 2>&1; tail -20 $OUT/main/ratios-ssb20.txt
hb 200 ssb20-gpu ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 200 ssb20-gpu-none ssb --sf 20 --db $B/ssb-sf20-none --device gpu --mode hot,warm --repeat 3 --vs duckdb
date
