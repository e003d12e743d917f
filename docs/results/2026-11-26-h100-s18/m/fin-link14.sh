. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/link14 && timeout 85 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q4.1,q2.1,q3.1 --runs 5 \
  --deliveries --vs-duckdb --variant new: --variant old:copysort=0,copybatch=0,primedramp=1,firstdeliveries=1 \
  > $OUT/link14/final.log 2>&1; \
  echo rc=$?; grep -v "^    d" $OUT/link14/final.log | cut -c1-900
