# session 22 call L: GPU tests after the warm absent-flags change; warm A/B of lazy paged deliveries at 25% and 10%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20 > /dev/null &
timeout -k 5 250 python3 -m pytest -q -x -p no:cacheprovider tests/differential/test_gpu_paged_parts.py tests/backend/test_gpu_stream_batch.py tests/differential/test_gpu_compressed_cache.py tests/exec/test_gpu_budget_admission.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/main/tests.log
wait; ls $B
timeout -k 5 200 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --variant first: \
  --variant l25:gpu_memory_limit=2184208865 --variant l25old:gpu_memory_limit=2184208865,lazypaged=0 \
  --variant l10:gpu_memory_limit=873683546 --variant l10old:gpu_memory_limit=873683546,lazypaged=0 --variant base: > $OUT/main/lazy-ab2.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/lazy-ab2.log | cut -c1-110; date
