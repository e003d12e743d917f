# final call 2: SSB SF 10 GPU hot+warm, TPC-H CPU 16 threads, sql7 corpus on the GPU
. ckpt/env.sh
mkdir -p $OUT/main $OUT/cpu7 $OUT/sql7
timeout 110 python3 -m hetdb.cli.main bench ssb --sf 10 --db $B/ssb-sf10 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out /tmp/o/ssb-gpu > $OUT/main/ssb10-gpu.log 2>&1; echo ssb gpu rc=$?
grep -aE "geomean" $OUT/main/ssb10-gpu.log
OUT= timeout 235 bash scripts/gpu-bench.sh tpch-cpu-t 10 16 > $OUT/cpu7/final-tpch-cpu-t16.log 2>&1; echo cpu rc=$?
grep -aE "geomean" $OUT/cpu7/final-tpch-cpu-t16.log
timeout -k 10 200 python3 -m pytest -q -m gpu tests/sql/test_sql_corpus.py tests/sql/test_sql_window_exec.py \
    -p no:cacheprovider > $OUT/sql7/corpus-gpu.log 2>&1; echo "pytest rc=$?" >> $OUT/sql7/corpus-gpu.log
tail -3 $OUT/sql7/corpus-gpu.log
