. ckpt/env.sh >/dev/null
export B
timeout 90 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --deliveries --variant base: --variant wake:linkwake=256 > $OUT/tl.log 2>&1; grep -E '^q[0-9.]+ |^geomean|    d0' $OUT/tl.log | cut -c1-150; grep -E '^q[0-9.]+ ' $OUT/tl.log | grep -oE '^q[0-9.]+ [a-z]+|host ms: early\([0-9]+ MiB\) [0-9.]+' | paste - - | head -8

