. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/gpu12
timeout -k 2 88 python3 -u scripts/gpu_hot_split.py $B/ssb-sf20 --runs 9 --warmup 2 --replays 3 \
  --experiment no_direct_finish,no_hot_replay --profile q2.1,q3.2 > $OUT/gpu12/final-split.log 2>&1; echo "split rc=$?"
grep -E "median host|within|: floor|^q[0-9.]+ " $OUT/gpu12/final-split.log

