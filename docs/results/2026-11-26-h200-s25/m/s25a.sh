# session 25 call A: GPU co-processing tests at the new commit; SSB SF 50 gpu vs auto (per-query keys, stepped shares, workers with the first delivery), all 13 queries, 14 runs each
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date; nproc; nvidia-smi --query-gpu=name --format=csv,noheader
( gen ssb-sf50 ssb --sf 50 ) > $OUT/main/gen-outer.log 2>&1 &
timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -5 | cut -c1-250
wait; cat $OUT/main/gen-outer.log; date
timeout -k 5 330 python3 scripts/coprocess_warm_table.py $B/ssb-sf50 --queries q1.1,q1.2,q1.3,q2.1,q2.2,q2.3,q3.1,q3.2,q3.3,q3.4,q4.1,q4.2,q4.3 --repeat 14 --threads 16 --budget-s 320 \
  --modes gpu,auto --json $OUT/main/table50.json > $OUT/main/table50.log 2>&1; echo "table rc=$?"
grep -A16 "^query" $OUT/main/table50.log | cut -c1-200; date
