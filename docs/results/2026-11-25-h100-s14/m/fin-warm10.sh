. ckpt/env.sh
mkdir -p $OUT/warm10
# SSB SF 20 warm (fresh connection per run, pages in the pinned host tier), 13 queries, one process,
# variants interleaved per query: all options on (this branch's defaults), each one off alone, all off
# (s13's "old"); a timeout still prints the geomeans of the queries done (the checkpoint's 3 x 3 at
# SF 1 took 4 s); then hot and warm runs at gpu_memory_limit = 10% of the plain data, bytes moved
# vs the replay, 'reuse' vs 'first' admission
timeout 58 python3 scripts/warm_timeline.py $B/ssb-sf20 --runs 3 --variant all: \
  --variant nodims:gpu_early_dims=false --variant noearly:gpu_early_scan=false \
  --variant nolink:gpu_copy_neighbours=false --variant nohostb:gpu_host_small_builds=false \
  --variant none:gpu_early_scan=false,gpu_copy_neighbours=false,gpu_host_small_builds=false \
  > $OUT/warm10/final-timeline.log 2>&1; echo timeline rc=$?
grep -aE "^link|exec|geomean" $OUT/warm10/final-timeline.log | cut -c1-330
timeout 30 python3 scripts/budget_replay_probe.py $B/ssb-sf20 --limit-bytes 873683546 --runs 3 --warm 2 \
  --variant reuse: --variant first:gpu_cache_admission=first \
  > $OUT/warm10/final-budget10.log 2>&1; echo budget rc=$?; cat $OUT/warm10/final-budget10.log
