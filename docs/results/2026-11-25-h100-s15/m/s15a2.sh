# call A2: issue 11 TPC-H SF 10 CPU at 16/4/1 threads (one DuckDB load)
. ckpt/env.sh; . ckpt/s15lib.sh; mkdir -p $OUT/main; date
timeout -k 5 560 python3 scripts/cpu_threads.py $B/tpch-sf10 tpch --threads 16,4,1 --repeat 3,2,1 --json $OUT/main/tpch-threads.json > $OUT/main/tpch-threads.log 2>&1
echo "tpch threads rc=$?"; grep -aE "^threads|^scaling|BAD|loaded" $OUT/main/tpch-threads.log
date
