. ckpt/env.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 220 python3 -m pytest -v -m gpu -p no:cacheprovider --tb=short -rfE \
  "tests/exec/test_gpu_compiled_strings.py::test_plain_string_join_keys_match_duckdb" tests/exec/test_shared_results.py \
  tests/sql/test_sql_window_exec.py tests/sql/test_sql_corpus.py tests/exec/test_kept_builds.py > $OUT/main/rest.log 2>&1; echo "tests rc=$?"
grep -cE " PASSED" $OUT/main/rest.log; grep -E " (FAILED|ERROR)" $OUT/main/rest.log | head; tail -2 $OUT/main/rest.log | cut -c1-200; date
