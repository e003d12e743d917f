# A/B: old harness (33152e1's fuzz_main: each configuration its own cases, a process per configuration task)
# vs new (each case under all 8 configurations in one process); same machine, same seed, fresh kernel caches.
# CPU seconds (user+sys, children included) as well as wall: the 2 cores are shared with other agents.
cd /work/wt/fuzz7
mkdir -p /tmp/fuzz7/old && git show 33152e1:tests/differential/fuzz_main.py > /tmp/fuzz7/old/fuzz_main.py
export PYTHONPATH=$PWD/src:$PWD/tests/differential
PY=/work/main/.venv/bin/python
Q=${Q:-200}; SEED=${SEED:-20261126}
rm -rf /tmp/fuzz7/kc-old /tmp/fuzz7/kc-new /tmp/fuzz7/ab-new; git log --oneline -1 | cut -c1-80
TIMEFORMAT="%R s wall, %U s user, %S s sys"
echo "== old $(date -u +%T)"
time (HETDB_KERNEL_CACHE=/tmp/fuzz7/kc-old nice -n 19 $PY /tmp/fuzz7/old/fuzz_main.py --queries $Q --seed $SEED --jobs 1 --keep-going 2>&1 | grep -E "total" | cut -c1-200)
echo "old: $((Q*8)) case runs"
echo "== new $(date -u +%T)"
time (HETDB_KERNEL_CACHE=/tmp/fuzz7/kc-new nice -n 19 $PY tests/differential/fuzz_main.py --dir /tmp/fuzz7/ab-new --queries $Q --seed $SEED --jobs 1 2>&1 | grep -E "case runs|^failures")
echo "new: $((Q*8)) case runs"
