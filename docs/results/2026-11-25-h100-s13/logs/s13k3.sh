# checkpoint 2 (merged main 0de9838): failing tests of the sweep in detail, helpers' checkpoint tests
# in parallel with the data; then timing probes one after another.
. ckpt/env.sh
mkdir -p $OUT/main $OUT/gpu9 $OUT/warm9 $OUT/cpu9
date
( timeout -k 5 170 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short --maxfail=3 -rfE \
    tests/exec/test_gpu_compiled_paged.py > $OUT/main/k3-paged.log 2>&1; echo "paged rc=$?" ) &
( timeout -k 5 170 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE \
    "tests/sql/test_sql_corpus.py::test_corpus[recursive.test-gpu]" tests/backend/test_gpu_replay.py \
    tests/backend/test_gpu_stream_batch.py > $OUT/main/k3-fixes.log 2>&1; echo "fixes rc=$?" ) &
( timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider -rfE tests/exec/test_gpu_early_scan.py \
  tests/backend/test_gpu_stream_prime.py "tests/exec/test_gpu_fusion.py::test_every_ssb_query_fuses_on_the_gpu" \
  "tests/exec/test_gpu_fusion.py::test_string_filters_and_scan_keys_fuse" \
  "tests/exec/test_gpu_compiled.py::test_compiled_pipelines_match_duckdb" \
  "tests/exec/test_gpu_fusion.py::test_block256_kernels_answer_as_duckdb" \
  > $OUT/warm9/ckpt2-tests.log 2>&1; echo "warm9+gpu9 tests rc=$?" ) &
( timeout 60 python3 -m hetdb.cli.main generate ssb --sf 2 /tmp/warm9-ssb2 > /dev/null 2>&1; echo gen2 rc=$?
  timeout 40 python3 -m hetdb.cli.main generate ssb --sf 1 /tmp/gpu9-ssb1 > /dev/null 2>&1; echo gen1 rc=$?
  timeout 60 python3 -m hetdb.cli.main generate tpch --sf 1 /tmp/cpu9-sf1 > /dev/null 2>&1; echo gent rc=$? ) &
wait
date
( timeout -k 5 30 python3 scripts/gpu_hot_probe.py /tmp/gpu9-ssb1 --suite ssb --queries q1.1,q2.1,q3.4 --runs 20 \
    --warmup 3 --connections 1 --sample-ms 0.2 --pipelines 5 --top 25; echo "ssb rc=$?" ) > $OUT/gpu9/ckpt2-ssb1-probe.log 2>&1
( timeout -k 5 20 python3 scripts/gpu_fused_shapes.py --shapes q1.1,q2.1,q4.1 --repeat 10 --split --eager-only \
    --variants q1.1,q2.1,q4.1 --tiles 128x4,256x4; echo "shapes rc=$?" ) > $OUT/gpu9/ckpt2-shapes-split.log 2>&1
echo gpu9 probes done
timeout 35 python3 scripts/warm_timeline.py /tmp/warm9-ssb2 --queries q1.1,q3.4,q4.3 --runs 3 --cprofile 4 \
  --variant new: --variant noearly:gpu_early_scan=false --variant devbuild:gpu_host_small_builds=false \
  > $OUT/warm9/ckpt2-timeline.log 2>&1; echo warm9 timeline rc=$?
( timeout 30 python3 -u scripts/cpu_phases.py /tmp/cpu9-sf1 tpch 1,16 q15 q11 q10 q21; echo "phases rc=$?"
  AB_CONFIGS=all,s11-thresholds,direct_range_per_row=64,all-again,heap-on timeout 30 python3 -u scripts/cpu_switches_ab.py \
    /tmp/cpu9-sf1 16 q11 q15 q10 q21 q02 q07; echo "ab rc=$?" ) > $OUT/cpu9/ckpt2.log 2>&1; echo cpu9 done
date
for f in $OUT/*/k3-*.log $OUT/*/ckpt2*.log; do echo "== $f: $(tail -1 $f | cut -c1-200)"; done
grep -h "^FAILED\|^ERROR" $OUT/*/*.log | cut -c1-250 | head -20
( cd $OUT && tar czf /tmp/s13k3.tgz * && rm -rf $OUT/* && mv /tmp/s13k3.tgz $OUT/ )
