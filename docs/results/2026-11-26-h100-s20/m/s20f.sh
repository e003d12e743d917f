# session 20 final (merged main): GPU tests of the touched paths while SSB SF 20 is generated; SSB SF 20 unlimited
# hot+warm, 10% hot+warm and 50% hot with DuckDB; the warm A/B of this session's switches (same process)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
timeout -k 5 ${TEST_T:-190} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=10 $(cat ckpt/final-tests20.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/final-tests.log | tail -12 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 150 ssb20-gpu $S --mode hot,warm --repeat 3 --vs duckdb
grep -E '^  q' $OUT/main/ssb20-gpu.log | tail -13
L10=873683546; L50=4368417732  # 10% and 50% of SSB SF 20 uncompressed (as sessions 16-19)
hb 120 ssb20-l10 $S --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L10
hb 60 ssb20-l50 $S --mode hot --repeat 3 --vs duckdb --gpu-memory-limit $L50
timeout -k 5 80 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --variant base: \
  --variant qprio:qprio=1 --variant nosmall:smalltail=0 --variant wake:linkwake=256 > $OUT/main/ab.log 2>&1; echo "ab rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/ab.log | cut -c1-120; date
