. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/warm11
# SSB SF 20 (compressed) hot, gpu_memory_limit = 50% of the plain data, one process, variants
# interleaved per query (3 untimed runs: reuse admission passes the first through, fills the cache
# at the second, a new column turns decoded by the third; then 3 timed, median exec ms):
#   old       = main before this branch: every page compressed, the kernel for any encoding, uncapped
#   new       = kernel variants + cap 8 (the defaults) + gpu_decoded_placement=true (off by default:
#               its GPU test failed at the checkpoint, cut before saying why)
#   unlimited = no gpu_memory_limit (pages decoded): the aim is new <= 2 x unlimited
# every variant's answer is compared with unlimited's ("ANSWER DIFFERS" on a query line if not).
# Cold kernel caches (the checkpoint: ~10 s a query for 5 variants): queries ordered so that a cut
# at --stop-after still covers every flight; the shapes of q1.2.. share q1.1's kernels.
timeout 85 python3 scripts/encoded_kernels_ab.py $B/ssb-sf20 --limit 4368417732 --warmup 3 --runs 3 \
  --stop-after 68 --queries q1.1,q2.1,q3.1,q4.1,q1.2,q2.2,q3.2,q4.2,q1.3,q2.3,q3.3,q4.3,q3.4 \
  --variant old:page_variants=0,gpu_encoded_min_blocks=0,gpu_decoded_placement=false \
  --variant new:gpu_decoded_placement=true --variant unlimited:gpu_memory_limit=none \
  > $OUT/warm11/final.log 2>&1; echo rc=$?
tail -40 $OUT/warm11/final.log

