# checkpoint call: every branch merged on main. Correctness groups in parallel (NVRTC compiles are
# single-threaded per process), then the timing probes one after another.
. ckpt/env.sh
mkdir -p $OUT/gpu8 $OUT/warm8 $OUT/cpu8 $OUT/sql8 $OUT/rel8
git log --oneline -1 2>/dev/null
( timeout 60 python3 -m pytest -q -x -p no:cacheprovider \
  "tests/codec/test_gpu_compressed_kernels.py::test_fused_page_table_mixes_plain_and_every_codec" \
  "tests/codec/test_gpu_compressed_kernels.py::test_generated_kernels_raise_on_overflow" \
  "tests/exec/test_gpu_fusion.py::test_every_ssb_query_fuses_on_the_gpu" \
  tests/backend/test_gpu_codegen.py -k "mixes or overflow or every_ssb or aggregate_matches or many_groups or case_and" \
  > $OUT/gpu8/ckpt-tests.log 2>&1; echo "gpu8 tests rc=$?" ) &
( Z=tests/exec/test_gpu_zero_copy.py::test_warm_ssb_equals_duckdb
  timeout 60 python3 -m pytest -q -p no:cacheprovider "$Z[decoded-overlap]" "$Z[zero-copy-decoded-cache]" \
  tests/backend/test_gpu_stream_batch.py::test_overlapped_deliveries_equal_the_host_reader "$Z[stream-encoded]" \
  > $OUT/warm8/ckpt-tests.log 2>&1; echo "warm8 tests rc=$?" ) &
( timeout 40 python3 -m pytest -q -p no:cacheprovider -rfE \
    "tests/backend/test_gpu_stream_batch.py::test_early_stop_returns_every_pin_reservation_and_device_byte" \
    > $OUT/rel8/ckpt-early-stop.log 2>&1; echo "rel8 early-stop rc=$?"
  timeout 50 python3 -m pytest -q -p no:cacheprovider -rfE tests/differential/test_sem_nan.py \
    -k "gpu and signed_zero" > $OUT/rel8/ckpt-sem-nan-gpu.log 2>&1; echo "rel8 sem-nan rc=$?" ) &
( timeout -k 5 170 python3 scripts/sql_surface_audit.py --configs gpu,gpu-tiny -v --out $OUT/sql8/ckpt-audit-gpu.md \
    > $OUT/sql8/ckpt-audit-gpu.log 2>&1; echo "audit rc=$?" >> $OUT/sql8/ckpt-audit-gpu.log; echo sql8 audit done ) &
( timeout -k 5 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/sql/test_sql_window_exec.py \
    "tests/sql/test_sql_corpus.py::test_corpus[window.test-gpu]" "tests/sql/test_sql_corpus.py::test_corpus[window.test-gpu-tiny]" \
    "tests/sql/test_sql_corpus.py::test_corpus[surface_audit.test-gpu]" "tests/sql/test_sql_corpus.py::test_corpus[surface_audit.test-gpu-tiny]" \
    > $OUT/sql8/ckpt-corpus-gpu.log 2>&1; echo "pytest rc=$?" >> $OUT/sql8/ckpt-corpus-gpu.log; echo sql8 corpus done ) &
( timeout 20 python3 -m hetdb.cli.main generate ssb --sf 2 /tmp/warm8-ssb2 > /dev/null 2>&1; echo gen2 rc=$?
  timeout 25 python3 -m hetdb.cli.main generate tpch --sf 1 /tmp/cpu8-sf1 >/dev/null 2>&1; echo gen tpch1 rc=$? ) &
wait
date
timeout 40 python3 scripts/gpu_fused_shapes.py --shapes q1.1,q2.1,q4.1 --variants q2.1 --repeat 10 \
  > $OUT/gpu8/ckpt-shapes.log 2>&1; echo "gpu8 shapes rc=$?"
timeout 25 python3 scripts/warm_timeline.py /tmp/warm8-ssb2 --queries q3.4,q1.1 --runs 3 \
  --variant new: --variant enc:gpu_stream_encoded=true --variant zc:gpu_zero_copy=on \
  --variant old:gpu_delivery_overlap=false > $OUT/warm8/ckpt-timeline.log 2>&1; echo "warm8 timeline rc=$?"
AB_CONFIGS=all,one-merge,all-again timeout 30 python3 -u scripts/cpu_switches_ab.py \
       /tmp/cpu8-sf1 16 q13 q07 q02 q11 > $OUT/cpu8/ckpt-ab.log 2>&1; echo "rc=$?" >> $OUT/cpu8/ckpt-ab.log
date
for f in $OUT/*/ckpt-*.log; do echo "== $f"; tail -2 $f | cut -c1-200; done
