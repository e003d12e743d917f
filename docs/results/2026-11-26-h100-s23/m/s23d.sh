# session 23 call D: pass-through scans delivered as stored under a budget (scan_device.PASS_PAGED): A/B at 10/25/50%, and the GPU tests of the path
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
L10=873683546; L25=2184208865; L50=4368417732
timeout -k 5 300 python3 ckpt/ab.py $B/ssb-sf20 4 hetdb.exec.operators.scan_device:PASS_PAGED \
  l25on:warm:$L25:1 l25off:warm:$L25:0 l50on:warm:$L50:1 l50off:warm:$L50:0 l10on:warm:$L10:1 l10off:warm:$L10:0 > $OUT/main/ab.log 2>&1; echo "ab rc=$?"
cut -c1-150 $OUT/main/ab.log | tail -8; date
timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_compressed_cache.py tests/differential/test_gpu_paged_parts.py tests/exec/test_gpu_decoded_placement.py tests/exec/test_gpu_early_scan.py tests/exec/test_gpu_budget_admission.py > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests.log | tail -8 | cut -c1-250
date
