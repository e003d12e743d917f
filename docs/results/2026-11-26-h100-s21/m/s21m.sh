# session 21 call M: EARLY_BUDGET_SHARE 0.9 in the tree (uncommitted): GPU tests under budgets; warm A/B at 10/25/50% against 0.6
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 150 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_early_scan.py tests/exec/test_gpu_budget_admission.py \
  tests/exec/test_shared_results.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
wait; date
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q3.1,q4.1 --runs 5 --variant first: \
  --variant l10:gpu_memory_limit=873683546 --variant l10o:gpu_memory_limit=873683546,earlyshare=0.6 \
  --variant l25:gpu_memory_limit=2184208865 --variant l25o:gpu_memory_limit=2184208865,earlyshare=0.6 \
  --variant l50:gpu_memory_limit=4368417732 --variant l50o:gpu_memory_limit=4368417732,earlyshare=0.6 > $OUT/main/share-ab.log 2>&1; echo "ab rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/share-ab.log | cut -c1-120; date
