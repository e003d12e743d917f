# final call 2 (merged main 587a34d): SSB SF 20 GPU hot+warm unlimited, 10% and 50% budgets (decoded placement on); TPC-H SF 10 GPU hot
. ckpt/env.sh; . ckpt/s15lib.sh; mkdir -p $OUT/main; date
hb 110 ssb20-gpu ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 120 ssb20-gpu-l10 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546 --set gpu_decoded_placement=true
hb 70 ssb20-gpu-l50 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 3 --vs duckdb --gpu-memory-limit 4368417732 --set gpu_decoded_placement=true
hb 130 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot --repeat 3 --vs duckdb
date
( cd $OUT && tar czf /tmp/f2.tgz * && rm -rf $OUT/* && mv /tmp/f2.tgz $OUT/ )
