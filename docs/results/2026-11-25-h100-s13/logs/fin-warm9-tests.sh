. ckpt/env.sh
mkdir -p $OUT/warm9
# 1. gpu tests: SSB 13 warm vs DuckDB with early fact scans (all primed / first only) and host-side
#    small builds, the primed streamer, TPC-H with kept builds (kept without their hash table, made
#    on demand) and compiled pipelines vs DuckDB (dictionary lookups on the host), the fused shapes
timeout 80 python3 -m pytest -q -p no:cacheprovider -rfE tests/exec/test_gpu_early_scan.py \
  tests/backend/test_gpu_stream_prime.py "tests/exec/test_kept_builds.py::test_tpch_with_kept_builds_on_the_gpu" \
  "tests/exec/test_gpu_compiled.py::test_compiled_pipelines_match_duckdb[None]" \
  > $OUT/warm9/final-tests.log 2>&1; echo tests rc=$?; tail -4 $OUT/warm9/final-tests.log

