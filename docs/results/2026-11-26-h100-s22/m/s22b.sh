# session 22 call B: paged deliveries of a decoded pass-through scan (PAGED_DECODED A/B) under budgets; which scans are paged
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout -k 5 60 python3 ckpt/pdiag.py $B/ssb-sf20 0,4368417732,2184208865,873683546 q1.1,q2.1,q3.1,q4.1 > $OUT/main/pdiag.log 2>&1; echo "pdiag rc=$?"
cut -c1-220 $OUT/main/pdiag.log | grep -v "^$" | sort -u | head -40
timeout -k 5 240 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --deliveries --variant first: \
  --variant l50:gpu_memory_limit=4368417732 --variant l50old:gpu_memory_limit=4368417732,pageddecoded=1 \
  --variant l25:gpu_memory_limit=2184208865 --variant l25old:gpu_memory_limit=2184208865,pageddecoded=1 --variant base: > $OUT/main/paged-ab.log 2>&1; echo "tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/paged-ab.log | cut -c1-150; date
timeout -k 5 200 python3 -m pytest -q -x -p no:cacheprovider tests/backend/test_gpu_stream_batch.py tests/backend/test_stream_batch_cpu.py tests/exec/test_gpu_decoded_placement.py tests/differential/test_gpu_compressed_cache.py tests/exec/test_gpu_early_scan.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; tail -3 $OUT/main/tests.log
