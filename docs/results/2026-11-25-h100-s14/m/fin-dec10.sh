source ckpt/env.sh; mkdir -p $OUT/dec10
# 0. the rle tile loader as merged (window of prefetched run values since the checkpoint) on the GPU:
#    tiles of 384/512/1024 rows of every rle case and of two full-size pages, against the CPU encoder
timeout 30 python3 -m pytest -q -m gpu --tb=short -p no:cacheprovider -x tests/codec/test_codec_gpu.py \
  -k "rle or full_size" > $OUT/dec10/final-tests.log 2>&1; echo tests rc=$?
# 1. decode-in-scan microbenchmark (the loaders as merged; rle "prev" = the loader before s14)
timeout 35 python3 scripts/gpu_decode_scan.py --rows 60e6 --repeat 5 \
  --only "lo_quantity,lo_extendedprice,per order" > $OUT/dec10/final-scan.log 2>&1; echo scan rc=$?
# 2. SSB SF 20 hot at gpu_memory_limit = 50% of the data (pages kept compressed, decoded in-kernel
#    by the fused kernels: load_tile_rle / load_tile_sel); before this branch (s14 main run m3):
#    q1.1 5.2 ms, q2.1 8.0 ms, q3.1 9.9 ms, q4.1 13.5 ms
timeout 80 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 3 \
  --vs none --gpu-memory-limit 4368417732 --queries q1.1,q2.1,q3.1,q4.1 --out $OUT/dec10/l50 \
  > $OUT/dec10/final-l50.log 2>&1; echo l50 rc=$?
tail -2 $OUT/dec10/final-tests.log; tail -6 $OUT/dec10/final-scan.log; tail -8 $OUT/dec10/final-l50.log
