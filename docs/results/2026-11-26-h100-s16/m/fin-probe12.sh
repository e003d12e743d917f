. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/probe12
timeout -k 2 88 python3 -u scripts/gpu_hot_split.py $B/ssb-sf20 --runs 5 --warmup 1 --replays 5 \
  --experiment fused_probe_rows > $OUT/probe12/final-split.log 2>&1; echo "split rc=$?"
grep -E " alone: |^q[0-9.]+ " $OUT/probe12/final-split.log

