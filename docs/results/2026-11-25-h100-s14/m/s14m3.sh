# measurement call 3: issue 9 budgets 25/50%; warm GPU-only vs CPU-only vs co-processing; issue 8/11 CPU 16 threads compressed vs none
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main; date
for f in 25 50; do L=$(limit_of 0.$f); echo "limit $f% = $L"
  hb 120 ssb20-gpu-l$f ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit $L; done
Q=q1.1,q2.1,q3.1,q4.1
hb 60 ssb20-warm-gpuonly ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs duckdb --queries $Q --route copy
hb 60 ssb20-warm-cpuroute ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs duckdb --queries $Q --route cpu
hb 60 ssb20-warm-coproc ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs duckdb --queries $Q --set gpu_coprocess=on
hb 90 ssb20-cpu-t16 ssb --sf 20 --db $B/ssb-sf20 --device cpu --mode hot --repeat 3 --threads 16 --vs duckdb
hb 90 ssb20-cpu-t16-none ssb --sf 20 --db $B/ssb-sf20-none --device cpu --mode hot --repeat 3 --threads 16 --vs duckdb
date
( cd $OUT && tar czf /tmp/m3.tgz main && rm -rf $OUT/main && mv /tmp/m3.tgz $OUT/ )
