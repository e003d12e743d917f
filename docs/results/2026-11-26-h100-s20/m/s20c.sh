. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; python3 -c "import cupy; s=cupy.cuda.Stream(non_blocking=False, priority=-65536); print(\"priority\", s.priority)" 2>&1 | tail -1; python3 -c "from hetdb.backend.gpu.stream_io import query_stream as q; print(\"qs\", q(0), getattr(q(0), \"priority\", None))" 2>&1 | tail -1
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen.log 2>&1 &
timeout -k 5 150 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_early_scan.py tests/backend/test_gpu_stream_batch.py \
  tests/backend/test_gpu_stream_prime.py tests/exec/test_gpu_fusion_host_plan_gpu.py tests/backend/test_gpu_copies.py tests/exec/test_gpu_fusion.py \
  > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
wait; cat $OUT/main/gen.log
timeout -k 5 170 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --deliveries \
  --variant base: --variant noq:qprio=0 --variant t3:tail=3 --variant old:tail=3,qprio=0 > $OUT/main/tlC.log 2>&1; echo tl rc=$?
grep -E "^q[0-9.]+ |^geomean" $OUT/main/tlC.log | cut -c1-150
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
hb 150 ssb20-warm $S --mode warm --repeat 3 --vs duckdb
grep -E '^  q' $OUT/main/ssb20-warm.log | tail -13
