. ckpt/env.sh
mkdir -p $OUT/warm9
# 2. THE probe: SSB SF 20 warm (fresh connection per run, pages in the pinned host tier), all 13
#    queries, in one process, interleaved: new (this branch's defaults) vs old (early fact scans,
#    neighbouring-page copies and host-side small builds off)
timeout 85 python3 scripts/warm_timeline.py $B/ssb-sf20 --runs 3 --variant new: \
  --variant old:gpu_early_scan=false,gpu_copy_neighbours=false,gpu_host_small_builds=false \
  > $OUT/warm9/final-timeline.log 2>&1; echo timeline rc=$?
grep -aE "^link|exec" $OUT/warm9/final-timeline.log | cut -c1-420
