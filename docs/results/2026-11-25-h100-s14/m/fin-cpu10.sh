mkdir -p $OUT/cpu10
( AB_CONFIGS=all,no-cluster,parallel_merge_rows=off AB_REPEAT=2 timeout 62 python3 -u \
    scripts/cpu_switches_ab.py $B/tpch-sf10 16 q09 q07 q21 q10 q13; echo "ab rc=$?"
  timeout 22 python3 -u scripts/cpu_phases.py $B/tpch-sf10 tpch 16 q09 q21 q07; echo "phases rc=$?" \
) > $OUT/cpu10/final.log 2>&1
grep -E "^all|^no-|^para|geomean|rc=|^q[0-9]+:" $OUT/cpu10/final.log
