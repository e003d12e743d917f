. ckpt/env.sh
mkdir -p $OUT
timeout 250 python3 -m pytest -q -m gpu --tb=long -x -p no:cacheprovider \
  "tests/differential/test_gpu_batches.py::test_gpu_compressed_batches_match_duckdb[ssb-256KB]" > $OUT/cb.log 2>&1; echo rc=$?
timeout 150 python3 -m pytest -q -m gpu --tb=short -p no:cacheprovider -x \
  "tests/differential/test_gpu_coprocess.py::test_coprocessed_suites_match_duckdb[ssb-compressed]" > $OUT/cop.log 2>&1; echo rc=$?
