# final call C: TPC-H SF 10 GPU hot+warm vs DuckDB; cpu9's TPC-H SF 10 A/B (B exported this time)
. ckpt/env.sh
export B
mkdir -p $OUT/main $OUT/cpu9
date
timeout 230 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot,warm --repeat 3 \
  --vs duckdb --out $OUT/main/tpch10-gpu > $OUT/main/tpch10-gpu.log 2>&1; echo tpch gpu rc=$?
grep -aE "geomean" $OUT/main/tpch10-gpu.log
rm -f $OUT/main/*/*.png
date
timeout -k 5 80 bash ckpt/fin-cpu9.sh 2>&1 | tail -20
date
( cd $OUT && tar czf /tmp/s13f3.tgz * && rm -rf $OUT/* && mv /tmp/s13f3.tgz $OUT/ )
