. ckpt/env.sh
timeout 170 bash scripts/gpu-bench.sh gen-ssb 20 > $OUT/gen-ssb20.log 2>&1; echo gen rc=$?
timeout 200 bash scripts/gpu-bench.sh ssb-gpu-limit 20 0.25 > $OUT/ssb-limit25.log 2>&1; echo l25 rc=$?
timeout 190 bash scripts/gpu-bench.sh ssb-gpu-limit 20 0.1 > $OUT/ssb-limit10.log 2>&1; echo l10 rc=$?
grep -E "geomean|limit =" $OUT/ssb-limit25.log $OUT/ssb-limit10.log
