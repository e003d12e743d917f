# session 21 call H: after the link-wake removal: early scan / hot replay / shared results GPU tests; warm A/B of QUERY_PRIORITY (dummy first variant)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 200 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_early_scan.py tests/exec/test_gpu_hot_replay.py \
  tests/exec/test_shared_results.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
timeout -k 5 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --variant first: --variant base: \
  --variant qprio:qprio=1 --variant base2: --variant qprio2:qprio=1 > $OUT/main/ab.log 2>&1; echo "ab rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/ab.log | cut -c1-160; date
