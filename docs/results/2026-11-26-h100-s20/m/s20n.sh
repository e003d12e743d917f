. ckpt/env.sh; mkdir -p $OUT/main
cat ckpt/COMMIT
T="tests/exec/test_shared_results.py::test_a_subplan_bound_twice_runs_once_on_the_gpu"
rm -rf /tmp/base20; mkdir -p /tmp/base20; tar xJf ckpt/base-ebb46a14.tar.xz -C /tmp/base20
( cd /tmp/base20 && PYTHONPATH=/tmp/hetdb-site:/tmp/base20/src timeout -k 5 90 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=line "$T" > $OUT/main/base.log 2>&1; echo "base ebb46a14 rc=$?" )
grep -E "passed|failed" $OUT/main/base.log | tail -2
rm -rf /tmp/b-0b1c2281; mkdir -p /tmp/b-0b1c2281; tar xJf ckpt/src-0b1c2281.tar.xz -C /tmp/b-0b1c2281; cp -r tests pyproject.toml /tmp/b-0b1c2281/
( cd /tmp/b-0b1c2281 && PYTHONPATH=/tmp/hetdb-site:/tmp/b-0b1c2281/src timeout -k 5 90 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=line "$T" > $OUT/main/0b1c2281.log 2>&1; echo "0b1c2281 rc=$?" )
grep -E "passed|failed" $OUT/main/0b1c2281.log | tail -1
rm -rf /tmp/b-7c01172f; mkdir -p /tmp/b-7c01172f; tar xJf ckpt/src-7c01172f.tar.xz -C /tmp/b-7c01172f; cp -r tests pyproject.toml /tmp/b-7c01172f/
( cd /tmp/b-7c01172f && PYTHONPATH=/tmp/hetdb-site:/tmp/b-7c01172f/src timeout -k 5 90 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=line "$T" > $OUT/main/7c01172f.log 2>&1; echo "7c01172f rc=$?" )
grep -E "passed|failed" $OUT/main/7c01172f.log | tail -1
