# The whole gpu-marked suite in parallel groups (each its own process; NVRTC compiles are per process).
# Usage: bash ckpt/s13sweep.sh DIR  (logs DIR/sweep-*.log), after `. ckpt/env.sh`.
D=$1; mkdir -p $D
g() { name=$1; t=$2; shift 2
  ( timeout -k 5 $t python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE "$@" > $D/sweep-$name.log 2>&1
    echo "sweep $name rc=$?" ) & }
g backend 280 tests/backend
g codec 280 tests/codec tests/api
g diffA 280 tests/differential/test_ssb.py tests/differential/test_tpch.py tests/differential/test_random_queries.py \
  tests/differential/test_window_suite.py tests/differential/test_compression.py tests/differential/test_routes.py \
  tests/differential/test_gpu_batches.py tests/differential/test_gpu_compressed_cache.py
g diffB 280 tests/differential/test_sem_overflow.py tests/differential/test_sem_overflow_kernels.py \
  tests/differential/test_sem_nan.py tests/differential/test_sem_functions.py tests/differential/test_sem_subquery_nulls.py \
  tests/differential/test_outer_join_simplification.py tests/differential/test_gpu_coprocess.py \
  tests/differential/test_engine_regressions.py tests/differential/test_fuzz_regressions.py \
  tests/differential/test_spill_sort_window.py tests/differential/test_tpch_prefetch.py tests/differential/test_configurations.py
g fuzz 280 tests/differential/test_fuzz_queries.py
g exec 280 tests/exec
g sql 280 tests/sql tests/dist tests/cache tests/storage tests/plan
wait
for f in $D/sweep-*.log; do echo "== $f: $(tail -1 $f | cut -c1-160)"; done
