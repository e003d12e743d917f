# after the final: TPC-H SF 10 GPU hot without kept state (--no-reuse), SSB SF 20 CPU at 4 and 1 threads
. ckpt/env.sh
mkdir -p $OUT/main $B
( timeout 220 bash scripts/gpu-bench.sh gen-tpch 10 > /dev/null 2>&1 ) &
( timeout 260 bash scripts/gpu-bench.sh gen-ssb 20 > /dev/null 2>&1 ) &
wait
timeout 150 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 \
  --vs duckdb --no-reuse --out /tmp/o/tpch-noreuse > $OUT/main/tpch-gpu-hot-noreuse.log 2>&1; echo noreuse rc=$?
for t in 4 1; do
  timeout 100 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device cpu --mode hot --repeat 1 \
    --threads $t --vs duckdb --out /tmp/o/ssb-cpu-t$t > $OUT/main/ssb-cpu-t$t.log 2>&1; echo t$t rc=$?
done
grep -aE "geomean" $OUT/main/*.log
