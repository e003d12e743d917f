mkdir -p $OUT/cpu9
( AB_CONFIGS=all,all-again,s11-thresholds,parallel_merge_rows=off,small_sink_rows=32k+small_source_rows=0+small_filter_keys=0,nogil_zero_cells=off,direct_scan_slots=0,direct_range_per_row=64,heap-on \
    AB_REPEAT=2 AB_ROUNDS=2 AB_SECONDS=50 timeout 62 python3 -u scripts/cpu_switches_ab.py $B/tpch-sf10 16 \
    q11 q15 q10 q21 q18 q03; echo "ab rc=$?"
  timeout 10 python3 -u scripts/cpu_phases.py $B/tpch-sf10 tpch 16 q11 q15; echo "phases rc=$?" \
) > $OUT/cpu9/final.log 2>&1
grep -E " q11 |geomean|rc=|^q[0-9]+:" $OUT/cpu9/final.log
