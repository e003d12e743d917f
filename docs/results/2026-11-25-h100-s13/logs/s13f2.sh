# final call B: gpu9's q09 leak test + SSB SF 20 split; warm9's SSB SF 20 warm probe; cpu9's TPC-H SF 10 A/B;
# TPC-H SF 10 CPU 16 threads vs DuckDB
. ckpt/env.sh
mkdir -p $OUT/main $OUT/gpu9 $OUT/warm9 $OUT/cpu9
date
timeout -k 5 140 bash ckpt/fin-gpu9.sh > /dev/null 2>&1; echo gpu9 rc=$?; tail -3 $OUT/gpu9/final-q09-leak.log; tail -16 $OUT/gpu9/final-ssb20-split.log
date
timeout -k 5 95 bash ckpt/fin-warm9-probe.sh 2>&1 | tail -30
date
timeout -k 5 90 bash ckpt/fin-cpu9.sh 2>&1 | tail -30
date
timeout 200 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device cpu --mode hot --repeat 3 \
  --threads 16 --vs duckdb --out $OUT/main/tpch10-cpu-t16 > $OUT/main/tpch10-cpu-t16.log 2>&1; echo tpch cpu rc=$?
grep -aE "geomean" $OUT/main/tpch10-cpu-t16.log
rm -f $OUT/main/*/*.png
date
( cd $OUT && tar czf /tmp/s13f2.tgz * && rm -rf $OUT/* && mv /tmp/s13f2.tgz $OUT/ )
