# final call 2 (merged main): SSB SF 20 GPU hot+warm unlimited, 10%, 25%, 50%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1; grep "^gen" $OUT/main/gen-ssb.log
timeout -k 5 70 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/differential/test_gpu_coprocess.py -k "tpch and batched" > $OUT/main/tests-co-tpch.log 2>&1; echo "co tpch rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/main/tests-co-tpch.log | cut -c1-300 | tail -4
hb 100 ssb20-gpu ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 110 ssb20-gpu-l10 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 110 ssb20-gpu-l25 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
hb 60 ssb20-gpu-l50 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
date
( cd $OUT && tar czf /tmp/f2.tgz * && rm -rf $OUT/* && mv /tmp/f2.tgz $OUT/ )
