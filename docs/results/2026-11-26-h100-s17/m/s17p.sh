# probe (main ed754b0): the 25% q3.1 hot regression: resident split / row-group admission, at 25% and 10%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1; grep "^gen" $OUT/main/gen-ssb.log
L25=2184208865; L10=873683546
timeout 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.1,q2.1,q4.1 --runs 3 \
  --variant l25:hot=1,gpu_memory_limit=$L25 --variant l25nosplit:hot=1,gpu_memory_limit=$L25,gpu_resident_split=false \
  --variant l25noalign:hot=1,gpu_memory_limit=$L25,aligned=0 \
  --variant l10:hot=1,gpu_memory_limit=$L10 --variant l10nosplit:hot=1,gpu_memory_limit=$L10,gpu_resident_split=false \
  --variant l10noalign:hot=1,gpu_memory_limit=$L10,aligned=0 > $OUT/main/probe25.log 2>&1; echo "probe rc=$?"
grep -E "^q|geomean" $OUT/main/probe25.log | cut -c1-330
date
