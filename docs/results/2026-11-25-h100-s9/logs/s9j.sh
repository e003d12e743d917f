. ckpt/env.sh
mkdir -p $B
( timeout 170 bash scripts/gpu-bench.sh gen-ssb 20 > $OUT/gen-ssb20.log 2>&1 ) &
timeout 230 python3 tests/differential/fuzz_main.py --device gpu --queries 150 --jobs 4 --seed 25112609 \
  --config default --config "batch_rows=7" --keep-going > $OUT/fuzz-gpu.log 2>&1; echo fuzz rc=$?
wait
timeout 200 bash scripts/gpu-bench.sh ssb-gpu 20 > $OUT/ssb-gpu.log 2>&1; echo ssb rc=$?
tail -15 $OUT/fuzz-gpu.log; grep geomean $OUT/ssb-gpu.log
