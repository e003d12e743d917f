# session 19 final call 1 (merged main): GPU tests of the touched paths while SSB SF 20 and TPC-H SF 10 are generated;
# then SSB SF 20 unlimited hot+warm with DuckDB, and the same warm bench at the session's base (c2401560) for the A/B
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nvidia-smi --query-gpu=name --format=csv,noheader
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
timeout -k 5 ${TEST_T:-200} python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE --durations=10 $(cat ckpt/final-tests19.txt) \
  > $OUT/main/final-tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/final-tests.log | tail -12 | cut -c1-250
wait; cat $OUT/main/gen-*.log | grep "^gen"; date
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 170 ssb20-gpu $S --mode hot,warm --repeat 3 --vs duckdb
grep -E '^  q' $OUT/main/ssb20-gpu.log | grep -v ' hot' | tail -13
rm -rf /tmp/base; mkdir -p /tmp/base; tar xJf ckpt/base-c2401560.tar.xz -C /tmp/base
( cd /tmp/base && PYTHONPATH=/tmp/hetdb-site:/tmp/base/src timeout -k 5 90 python3 -m hetdb.cli.main bench $S --mode warm --repeat 3 --vs none --out $OUT/main/base-warm > $OUT/main/base-warm.log 2>&1; echo "base bench rc=$?" )
grep -E '^  q|mode' $OUT/main/base-warm.log; rm -f $OUT/main/*/*.png; date
timeout -k 5 80 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 5 --variant base: \
  --variant planold:planhost=0 --variant numpy:planloops=0 --variant deliverold:warmgroups=0,keepcopies=0 > $OUT/main/ab.log 2>&1; echo "ab rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/ab.log | cut -c1-130; date
( cd $OUT && tar czf /tmp/f1.tgz * && rm -rf $OUT/* && mv /tmp/f1.tgz $OUT/ )
