. ckpt/env.sh
mkdir -p $OUT/gpu9
( timeout -k 5 45 python3 -m pytest -q -p no:cacheprovider -m gpu tests/exec/test_gpu_compiled_paged.py -k q09; \
    echo "pytest rc=$?" ) > $OUT/gpu9/final-q09-leak.log 2>&1
tail -3 $OUT/gpu9/final-q09-leak.log

. ckpt/env.sh
mkdir -p $OUT/gpu9
( timeout -k 5 85 python3 scripts/gpu_hot_split.py $B/ssb-sf20 --suite ssb --runs 10 --warmup 5 --replays 10 \
    --profile q1.1,q2.1,q3.4,q4.1 --variants q2.1,q3.1,q3.2,q4.3 --tiles 128x4,256x4 --top 25; \
    echo "split rc=$?" ) > $OUT/gpu9/final-ssb20-split.log 2>&1
tail -16 $OUT/gpu9/final-ssb20-split.log
