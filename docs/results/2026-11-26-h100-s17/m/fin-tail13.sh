. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/tail13 && timeout 85 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q4.1,q2.1,q1.1,q3.1 --runs 5 \
  --deliveries --vs-duckdb --variant new: --variant old:factfirst=1,samestream=0,tail=0,primedramp=3,closeconsumed=0,scatter=0 \
  > $OUT/tail13/final.log 2>&1; \
  echo rc=$?; grep -v "^    d" $OUT/tail13/final.log | cut -c1-900

