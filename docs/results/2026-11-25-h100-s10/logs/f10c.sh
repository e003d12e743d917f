# final part 3: SSB CPU 16 threads (cpu6), window CPU 16 threads (win6), SSB 10% budget with co-processing on (issue 9)
. ckpt/env.sh
mkdir -p $OUT/main $OUT/cpu6 $OUT/win6
OUT= timeout 150 bash scripts/gpu-bench.sh ssb-cpu-t 20 16 > $OUT/cpu6/ssb-cpu-t16.log 2>&1; echo ssb-cpu rc=$?
OUT= timeout 150 bash scripts/gpu-bench.sh window-cpu-t 10 16 > $OUT/win6/window-cpu-t16.log 2>&1; echo window-cpu rc=$?
limit=$(python3 -c "import sys; print(int(int(sys.argv[1]) * 0.1))" "$(du -sb $B/ssb-sf20 | cut -f1)")
timeout 100 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs duckdb --queries q1.1,q2.1,q3.1,q4.1 \
  --gpu-memory-limit $limit --set gpu_coprocess=on --out /tmp/hetdb-bench-out/ssb-limit10-coprocess > $OUT/main/ssb-limit10-coprocess.log 2>&1; echo cop rc=$?
timeout 80 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs none --queries q1.1,q2.1,q3.1,q4.1 \
  --gpu-memory-limit $limit --out /tmp/hetdb-bench-out/ssb-limit10-gpuonly > $OUT/main/ssb-limit10-gpuonly.log 2>&1; echo gpuonly rc=$?
mkdir -p $OUT/dec6; timeout 115 python3 scripts/gpu_compressed_cache.py $B/dec6-ssb5 --sf 5 --repeat 3 --out $OUT/dec6 > $OUT/dec6/compressed-cache.log 2>&1; echo cc rc=$?; tail -5 $OUT/dec6/compressed-cache.log
grep -aE "geomean|^  q" $OUT/*/ssb-cpu-t16.log $OUT/win6/window-cpu-t16.log $OUT/main/ssb-limit10-*.log | cut -c1-140
