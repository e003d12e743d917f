# final call 3: the GPU fuzz step (issue 15), the window suite on the CPU at 16 threads (issue 14)
. ckpt/env.sh
mkdir -p $OUT/rel8 $OUT/sql8 $B
( timeout 320 python3 -m hetdb.cli.main generate tpch --sf 10 $B/tpch-sf10 > /dev/null 2>&1; echo gen tpch rc=$? ) &
D=/tmp/rel8-fuzz-gpu
( timeout -k 5 70 python3 tests/differential/fuzz_main.py --dir $D --seed 20261125 --queries 100000 \
      --cases 600:4000 --device gpu --jobs 16 --gpu-jobs 16 --seconds 60
  echo "fuzz rc=$?"
  echo "==== summary.txt"; cat $D/summary.txt
  echo "==== failures.txt"; head -c 200000 $D/failures.txt 2>/dev/null ) > $OUT/rel8/final-fuzz-gpu.log 2>&1
gzip -c $D/results.jsonl > $OUT/rel8/final-fuzz-gpu-results.jsonl.gz
grep -E "fuzz rc|^gpu:|failures:|FAILED" $OUT/rel8/final-fuzz-gpu.log | head -20
wait
timeout -k 5 175 python3 -m hetdb.cli.main bench window --sf 10 --db $B/tpch-sf10 --device cpu --mode hot --repeat 3 \
    --threads 16 --vs duckdb --out $OUT/sql8/window-cpu-t16 > $OUT/sql8/final-window-cpu-t16.log 2>&1; echo "window cpu rc=$?"
grep -aE "geomean" $OUT/sql8/final-window-cpu-t16.log
rm -f $OUT/*/*/*.png
( cd $OUT && tar czf /tmp/s12f3.tgz * && rm -rf $OUT/* && mv /tmp/s12f3.tgz $OUT/ )
ls -la $OUT
