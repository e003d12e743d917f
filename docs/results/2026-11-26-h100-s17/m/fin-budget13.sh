. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/budget13
timeout 88 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.1,q4.1,q2.1 --runs 3 --deliveries --vs-duckdb \
  --variant l10:hot=1,gpu_memory_limit=873683546 \
  --variant l10main:hot=1,gpu_memory_limit=873683546,gpu_resident_split=false,aligned=0 \
  --variant l25:hot=1,gpu_memory_limit=2184208865 \
  --variant l25main:hot=1,gpu_memory_limit=2184208865,gpu_resident_split=false,aligned=0 \
  --variant w10:gpu_memory_limit=873683546 > $OUT/budget13/final.log 2>&1; echo rc=$?
grep -v "^    d" $OUT/budget13/final.log | cut -c1-500

