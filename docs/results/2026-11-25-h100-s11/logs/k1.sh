# checkpoint call 1: data, gpu7 bench + tests
. ckpt/env.sh
mkdir -p $OUT/gpu7 $OUT/main $B
( timeout 250 python3 -m hetdb.cli.main generate tpch --sf 10 $B/tpch-sf10 > /dev/null 2>&1; echo gen tpch rc=$? ) &
( timeout 250 python3 -m hetdb.cli.main generate ssb --sf 10 $B/ssb-sf10 > /dev/null 2>&1; echo gen ssb rc=$? ) &
wait
timeout 190 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 \
  --vs duckdb --out /tmp/o/tpch-hot > $OUT/gpu7/tpch-hot.log 2>&1; echo bench rc=$?
grep -aE "geomean" $OUT/gpu7/tpch-hot.log
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/exec/test_gpu_compiled_fold.py tests/exec/test_gpu_fusion_wide.py tests/exec/test_gpu_exec.py::test_hot_queries_run_from_the_device_cache tests/backend/test_gpu_stream_host.py::test_fresh_connections_stream_from_the_host_tier > $OUT/gpu7/tests.log 2>&1; echo tests rc=$?
tail -3 $OUT/gpu7/tests.log
