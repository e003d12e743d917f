# final call 2 (merged main): probe12, warm12 final blocks; SSB SF 20 GPU hot+warm unlimited, 10%, 50%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main $OUT/probe12 $OUT/warm12; date
for n in probe12 warm12; do
  timeout -k 5 60 bash ckpt/fin-$n.sh > $OUT/$n/final-stdout.log 2>&1; echo "$n rc=$?"; tail -16 $OUT/$n/final-stdout.log | cut -c1-220; date
done
hb 100 ssb20-gpu ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 110 ssb20-gpu-l10 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 60 ssb20-gpu-l50 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
date
( cd $OUT && tar czf /tmp/f2.tgz * && rm -rf $OUT/* && mv /tmp/f2.tgz $OUT/ )
