# final call 2 (merged main): warm10's and cpu10's final blocks; SSB SF 20 GPU hot+warm, 10% and 50% budgets
. ckpt/env.sh; . ckpt/s14lib.sh; mkdir -p $OUT/main $OUT/warm10 $OUT/cpu10; date
timeout -k 5 95 bash ckpt/fin-warm10.sh > $OUT/warm10/final-stdout.log 2>&1; echo "warm10 rc=$?"; tail -20 $OUT/warm10/final-stdout.log | cut -c1-250
date
timeout -k 5 90 bash ckpt/fin-cpu10.sh > $OUT/cpu10/final-stdout.log 2>&1; echo "cpu10 rc=$?"; tail -12 $OUT/cpu10/final-stdout.log | cut -c1-250
date
hb 120 ssb20-gpu ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb
hb 130 ssb20-gpu-l10 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 873683546
hb 60 ssb20-gpu-l50 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot --repeat 3 --vs duckdb --gpu-memory-limit 4368417732
date
( cd $OUT && tar czf /tmp/f2.tgz * && rm -rf $OUT/* && mv /tmp/f2.tgz $OUT/ )
