# checkpoint call 2: cpu7 16-thread TPC-H, integrator warm SSB A/B + TPC-H warm, sql7 audit
. ckpt/env.sh
mkdir -p $OUT/cpu7 $OUT/main $OUT/sql7
timeout 230 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device cpu --mode hot --repeat 3 \
  --threads 16 --vs duckdb --out /tmp/o/tpch-cpu > $OUT/cpu7/tpch-cpu-t16.log 2>&1; echo cpu rc=$?
grep -aE "geomean" $OUT/cpu7/tpch-cpu-t16.log
for adm in reuse first; do
  timeout 75 python3 -m hetdb.cli.main bench ssb --sf 10 --db $B/ssb-sf10 --device gpu --mode warm --repeat 3 \
    --vs duckdb --set gpu_cache_admission=$adm --out /tmp/o/ssbw-$adm > $OUT/main/ssb10-warm-$adm.log 2>&1; echo ssb $adm rc=$?
  grep -aE "geomean" $OUT/main/ssb10-warm-$adm.log
done
timeout 180 python3 scripts/sql_surface_audit.py --configs cpu,gpu --out $OUT/sql7/audit-gpu.md > $OUT/sql7/audit-gpu.log 2>&1; echo audit rc=$?
tail -3 $OUT/sql7/audit-gpu.log
