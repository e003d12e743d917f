# final call 3 (merged main): TPC-H SF 10 GPU hot+warm; co-processing auto vs off, SSB SF 20 warm, 4 queries
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main; date
hb 200 tpch10-gpu tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode hot,warm --repeat 3 --vs duckdb
Q=q1.1,q2.1,q3.1,q4.1
for co in off auto; do
  hb 60 ssb20-warm-co-$co ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs duckdb --queries $Q --set gpu_coprocess=$co
done
date
( cd $OUT && tar czf /tmp/f3.tgz * && rm -rf $OUT/* && mv /tmp/f3.tgz $OUT/ )
