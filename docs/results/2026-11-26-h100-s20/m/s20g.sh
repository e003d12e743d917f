# session 20 last call (merged main): the warm A/B again with an untimed-order first variant (the first variant
# of each query's round ran slowest in earlier calls), then the GPU tests of the touched paths, verbose
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 120 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --variant first: --variant base: \
  --variant qprio:qprio=1 --variant wake:linkwake=256 --variant base2: --variant t3:tail=3 > $OUT/main/ab2.log 2>&1; echo "ab rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/ab2.log | cut -c1-100; date
timeout -k 5 ${TEST_T:-250} python3 -m pytest -v -m gpu -p no:cacheprovider --tb=short -rfE $(cat ckpt/final-tests20.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "tests rc=$?"; grep -cE " PASSED" $OUT/main/final-tests.log; grep -E " (FAILED|ERROR)" $OUT/main/final-tests.log | head; tail -2 $OUT/main/final-tests.log | cut -c1-200; date
