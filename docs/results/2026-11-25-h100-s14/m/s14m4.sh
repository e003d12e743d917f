# measurement call 4: TPC-H SF 10 compressed and none; GPU hot/warm each (issue 8)
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main; date
gen tpch-sf10 tpch --sf 10 & gen tpch-sf10-none tpch --sf 10 --compression none & wait
python3 scripts/codec_ratios.py $B/tpch-sf10 tpch > $OUT/main/ratios-tpch10.txt 2>&1; tail -30 $OUT/main/ratios-tpch10.txt | cut -c1-150
hb 200 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 200 tpch10-gpu-none tpch --sf 10 --db $B/tpch-sf10-none --device gpu --mode hot,warm --repeat 3 --vs duckdb
date
( cd $OUT && tar czf /tmp/m4.tgz main && rm -rf $OUT/main && mv /tmp/m4.tgz $OUT/ )
