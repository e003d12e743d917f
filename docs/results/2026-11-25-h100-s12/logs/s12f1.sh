# final call 1: data (TPC-H SF 10 and SSB SF 20) with the GPU correctness groups beside it; SSB SF 20
# GPU hot+warm vs DuckDB (gpu8, warm8: issues 10, 9)
. ckpt/env.sh
mkdir -p $OUT/main $OUT/gpu8 $OUT/warm8 $OUT/sql8 $OUT/rel8 $B
( timeout 300 python3 -m hetdb.cli.main generate tpch --sf 10 $B/tpch-sf10 > /dev/null 2>&1; echo gen tpch rc=$? ) &
( timeout 300 python3 -m hetdb.cli.main generate ssb --sf 20 $B/ssb-sf20 > /dev/null 2>&1; echo gen ssb rc=$? ) &
( Z=tests/exec/test_gpu_zero_copy.py
  timeout 90 python3 -m pytest -q -p no:cacheprovider -rfE "$Z::test_warm_ssb_equals_duckdb[decoded-overlap]" \
  "$Z::test_warm_ssb_equals_duckdb[zero-copy-decoded-cache]" \
  "$Z::test_auto_reads_in_place_after_a_run_measured_a_selective_pipeline" \
  > $OUT/warm8/final-tests.log 2>&1; echo warm8 tests rc=$? ) &
( timeout 90 python3 -m pytest -q -x -p no:cacheprovider -rfE \
  "tests/codec/test_gpu_compressed_kernels.py::test_fused_page_table_mixes_plain_and_every_codec" \
  "tests/codec/test_gpu_compressed_kernels.py::test_generated_kernels_raise_on_overflow" \
  "tests/exec/test_gpu_fusion.py::test_every_ssb_query_fuses_on_the_gpu" \
  tests/backend/test_gpu_codegen.py -k "mixes or overflow or every_ssb or aggregate_matches or many_groups or case_and" \
  > $OUT/gpu8/final-tests.log 2>&1; echo "gpu8 tests rc=$?"
  timeout 40 python3 -m pytest -q -p no:cacheprovider -rfE \
    "tests/backend/test_gpu_stream_batch.py::test_early_stop_returns_every_pin_reservation_and_device_byte" \
    tests/differential/test_sem_nan.py -k "early_stop or (gpu and signed_zero)" > $OUT/rel8/final-tests.log 2>&1; echo "rel8 tests rc=$?" ) &
( timeout 40 python3 scripts/gpu_stream_leak_probe.py batched row-group > $OUT/rel8/final-leak-probe.log 2>&1
  echo "rel8 probe rc=$?"
  timeout 40 python3 tests/differential/fuzz_main.py --seed 20261125 --case 254 --device gpu --config default \
    > $OUT/rel8/final-replay254.log 2>&1; echo "rel8 replay 254 rc=$?" ) &
( timeout -k 5 200 python3 scripts/sql_surface_audit.py --configs gpu -v --out $OUT/sql8/final-audit-gpu.md \
    > $OUT/sql8/final-audit-gpu.log 2>&1; echo "audit rc=$?" >> $OUT/sql8/final-audit-gpu.log
  timeout -k 5 100 python3 -m pytest -q -m gpu -p no:cacheprovider "tests/sql/test_sql_corpus.py::test_corpus[window.test-gpu]" \
    "tests/sql/test_sql_corpus.py::test_corpus[window.test-gpu-tiny]" "tests/sql/test_sql_corpus.py::test_corpus[surface_audit.test-gpu]" \
    > $OUT/sql8/final-corpus-gpu.log 2>&1; echo "pytest rc=$?" >> $OUT/sql8/final-corpus-gpu.log; echo sql8 done ) &
wait
date
timeout 170 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out $OUT/main/ssb20-gpu > $OUT/main/ssb20-gpu.log 2>&1; echo ssb gpu rc=$?
rm -f $OUT/main/ssb20-gpu/*.png
grep -aE "geomean" $OUT/main/ssb20-gpu.log
timeout 30 python3 scripts/gpu_fused_shapes.py --shapes q1.1,q2.1,q4.1 --variants q2.1 --repeat 10 \
  > $OUT/gpu8/final-shapes.log 2>&1; echo "shapes rc=$?"
timeout 50 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.4,q1.3,q1.1 --runs 3 --variant new: \
  --variant nozc:gpu_zero_copy=off --variant old:gpu_delivery_overlap=false,gpu_zero_copy=off \
  > $OUT/warm8/final-timeline.log 2>&1; echo timeline rc=$?
date
for f in $OUT/*/final-*.log; do echo "== $f"; tail -2 $f | cut -c1-200; done
( cd $OUT && tar czf /tmp/s12f1.tgz * && rm -rf $OUT/* && mv /tmp/s12f1.tgz $OUT/ )
ls -la $OUT
