# session 20: the other GPU test files (not in final-tests20.txt, not tests/dist), verbose
. ckpt/env.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
timeout -k 5 ${TEST_T:-300} python3 -m pytest -v -m gpu -p no:cacheprovider --tb=short -rfE $(cat ckpt/other-tests20b.txt) \
  > $OUT/main/other-tests-b.log 2>&1; echo "tests rc=$?"; grep -cE " PASSED" $OUT/main/other-tests-b.log; grep -E " (FAILED|ERROR)" $OUT/main/other-tests-b.log | head -20 | cut -c1-200; tail -2 $OUT/main/other-tests-b.log | cut -c1-200; date
