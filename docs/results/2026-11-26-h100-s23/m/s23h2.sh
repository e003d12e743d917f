# session 23 call H2 (right after H1, same machine): TPC-H SF 10 hot+warm with DuckDB (nvCOMP installed by H1), SSB SF 20 cold
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; ls $B
hb 330 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot,warm --repeat 3 --vs duckdb
grep -aE 'mode (hot|warm)' $OUT/main/tpch10-gpu.log | cut -c1-200; date
hb 150 ssb20-cold ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode cold --repeat 1 --vs none
grep -aE '^  q|mode' $OUT/main/ssb20-cold.log | tail -14 | cut -c1-160; date
rm -rf $OUT/main/tpch10-gpu/*.json
