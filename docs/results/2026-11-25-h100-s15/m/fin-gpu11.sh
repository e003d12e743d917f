. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/gpu11
timeout 88 python3 -u scripts/gpu_hot_split.py $B/ssb-sf20 --runs 15 --warmup 2 --replays 3 \
  --experiment no_hot_replay > $OUT/gpu11/final-split.log 2>&1; echo "split rc=$?"
tail -28 $OUT/gpu11/final-split.log

