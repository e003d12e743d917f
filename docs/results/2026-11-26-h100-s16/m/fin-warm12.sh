. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/warm12
timeout 88 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 3 --deliveries \
  --vs-duckdb --variant base: --variant copyup:upload=0 --variant dimsfirst:factfirst=0 \
  --variant l10:hot=1,gpu_memory_limit=873683546 --variant l10noahead:hot=1,gpu_memory_limit=873683546,aheadpaged=0 \
  > $OUT/warm12/final.log 2>&1; echo rc=$?
grep -v "^    d" $OUT/warm12/final.log | cut -c1-400

