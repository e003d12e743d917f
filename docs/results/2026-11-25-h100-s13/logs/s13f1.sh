# final call A (merged main): data (TPC-H SF 10, SSB SF 20) while the GPU tests run; SSB SF 20 GPU hot+warm
# vs DuckDB; gpu9's split; warm9's tests.
. ckpt/env.sh
mkdir -p $OUT/main $OUT/gpu9 $OUT/warm9 $OUT/cpu9 $OUT/rel9 $B
date
( timeout 330 python3 -m hetdb.cli.main generate tpch --sf 10 $B/tpch-sf10 > /dev/null 2>&1; echo gen tpch rc=$? ) &
( timeout 330 python3 -m hetdb.cli.main generate ssb --sf 20 $B/ssb-sf20 > /dev/null 2>&1; echo gen ssb rc=$? ) &
( timeout -k 5 250 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE \
    tests/exec/test_gpu_compiled_paged.py tests/codec/test_gpu_string_pages.py \
    "tests/sql/test_sql_corpus.py::test_corpus[recursive.test-gpu]" tests/backend/test_gpu_stream_batch.py \
    tests/backend/test_gpu_replay.py > $OUT/main/final-fixes.log 2>&1; echo "main fixes rc=$?" ) &
( timeout -k 5 200 bash ckpt/fin-warm9-tests.sh; echo "warm9 tests rc=$?" ) &
wait
date
timeout 200 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out $OUT/main/ssb20-gpu > $OUT/main/ssb20-gpu.log 2>&1; echo ssb gpu rc=$?
rm -f $OUT/main/ssb20-gpu/*.png
grep -aE "geomean" $OUT/main/ssb20-gpu.log
date

date
grep -h "^FAILED\|^ERROR\|passed\|failed" $OUT/*/final-*.log | cut -c1-250 | head -30
( cd $OUT && tar czf /tmp/s13f1.tgz * && rm -rf $OUT/* && mv /tmp/s13f1.tgz $OUT/ )
