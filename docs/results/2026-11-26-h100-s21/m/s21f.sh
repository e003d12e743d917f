# session 21 call F: GPU tests of the touched paths (shared results' placeholders, fusion, early scans, batches); SSB SF 20 hot+warm with DuckDB
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nproc
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 ${TEST_T:-330} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=6 $(cat ckpt/final-tests21.txt) \
  > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -12 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 170 ssb20-gpu $S --mode hot,warm --repeat 3 --vs duckdb
grep -E '^  q' $OUT/main/ssb20-gpu.log | tail -13; date
