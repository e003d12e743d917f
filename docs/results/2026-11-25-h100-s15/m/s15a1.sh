# call A1 (main 95ae171): SSB SF 20 + TPC-H SF 10 data; issue 11 first-query latency and SSB CPU at 16/4/1 threads
. ckpt/env.sh; . ckpt/s15lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; nproc; date
gen ssb-sf20 ssb --sf 20 & gen tpch-sf10 tpch --sf 10 & wait
date
for k in cold warm; do NUMBA_CACHE_DIR=/tmp/nc-fq timeout 120 python3 scripts/first_query.py $B/ssb-sf20 16 2>&1 | tail -2 | sed "s/^/$k: /"; done | tee $OUT/main/first-query.log
timeout -k 5 300 python3 scripts/cpu_threads.py $B/ssb-sf20 ssb --threads 16,4,1 --repeat 3,2,1 --json $OUT/main/ssb-threads.json > $OUT/main/ssb-threads.log 2>&1
echo "ssb threads rc=$?"; grep -aE "^threads|^scaling|BAD|loaded" $OUT/main/ssb-threads.log
date
