# checkpoint call 2: cpu10's block alone (CPU timings), then co-processing auto vs off, warm, SSB SF 1 (main)
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main $OUT/cpu10; date
( cd /tmp/br/cpu10 && . ckpt/env.sh >/dev/null && export B && timeout -k 5 75 bash step.sh ) > $OUT/cpu10/step-stdout.log 2>&1
echo "cpu10 rc=$?"; tail -14 $OUT/cpu10/step-stdout.log | cut -c1-250
D=/tmp/warm10-ssb1; [ -d $D/tables/lineorder ] || D=/tmp/gpu10-ssb1
for co in off auto; do
  hb 60 ssb1-warm-co-$co ssb --sf 1 --db $D --device gpu --mode warm --repeat 3 --vs duckdb --set gpu_coprocess=$co
done
date
( cd $OUT && tar czf /tmp/k2.tgz * && rm -rf $OUT/* && mv /tmp/k2.tgz $OUT/ )
