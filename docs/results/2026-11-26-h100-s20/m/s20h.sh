# session 20: SSB SF 20 warm again with 5 timed runs a query (DuckDB in the same run), then cold (1 run)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 150 ssb20-warm5 $S --mode warm --repeat 5 --vs duckdb
grep -E '^  q' $OUT/main/ssb20-warm5.log | tail -13
hb 200 ssb20-cold $S --mode cold --repeat 1 --vs none
grep -E '^  q|mode' $OUT/main/ssb20-cold.log | tail -14; date
