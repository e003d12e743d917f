# TPC-H SF 10 with nvCOMP, part 2 (the same machine, right after part 1): DuckDB carried, nvCOMP still installed
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; ls $B
hb 300 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode warm --repeat 3 --vs duckdb
grep -E '^  q' $OUT/main/tpch10-gpu.log | cut -c1-120; date
