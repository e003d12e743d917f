. ckpt/env.sh
mkdir -p $OUT/gpu10
# 1. gpu tests: literal kernels (SSB + mixed, two literal sets each, vs DuckDB, no module loaded for
#    the second set), dense codegen vs NumPy, fused_block256 vs DuckDB
timeout -k 5 60 python3 -m pytest -q -p no:cacheprovider -rfE -m gpu tests/exec/test_gpu_literal_kernels.py \
  tests/backend/test_gpu_codegen.py "tests/exec/test_gpu_fusion.py::test_block256_kernels_answer_as_duckdb" \
  "tests/exec/test_gpu_fusion.py::test_every_ssb_query_fuses_on_the_gpu" \
  > $OUT/gpu10/final-tests.log 2>&1; echo tests rc=$?; tail -5 $OUT/gpu10/final-tests.log
# 2. ONE probe: hot SSB SF 20, each query default (128 threads per block) then fused_block256 in the same
#    process (A/B for the default), then with other literal values (modules loaded: should be 0; hot
#    times as the first set's); per run the host time before the first launch / after the last kernel;
#    for q1.1 and q4.1 per-pipeline times, cProfile (own and cumulative time) and a sampling profile
#    of 100 hot runs (where the host's 1.2-2.2 ms go)
timeout -k 5 88 python3 scripts/gpu_hot_split.py $B/ssb-sf20 --suite ssb --runs 8 --warmup 3 --replays 8 \
  --experiment fused_block256 --literals --profile q1.1,q4.1 --top 20 > $OUT/gpu10/final-ssb20-split.log 2>&1
echo split rc=$?; tail -32 $OUT/gpu10/final-ssb20-split.log
