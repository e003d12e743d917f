# session 20: test_plain_string_join_keys_match_duckdb at HEAD and at the session's base ebb46a14
. ckpt/env.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
T="tests/exec/test_gpu_compiled_strings.py::test_plain_string_join_keys_match_duckdb"
timeout -k 5 100 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=long -x "$T" > $OUT/main/head.log 2>&1; echo "head rc=$?"
grep -E "^E |assert|passed|failed" $OUT/main/head.log | head -20 | cut -c1-300
rm -rf /tmp/base20; mkdir -p /tmp/base20; tar xJf ckpt/base-ebb46a14.tar.xz -C /tmp/base20
( cd /tmp/base20 && PYTHONPATH=/tmp/hetdb-site:/tmp/base20/src timeout -k 5 100 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short "$T" > $OUT/main/base.log 2>&1; echo "base rc=$?" )
grep -E "^E |passed|failed" $OUT/main/base.log | head -10 | cut -c1-300; date
