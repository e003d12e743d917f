# session 25 call D: SSB SF 50 gpu vs auto interleaved after 16 learning runs (alone timed before co-processing)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf50 ssb --sf 50; date
timeout -k 5 420 python3 ckpt/coab.py $B/ssb-sf50 16 8 > $OUT/main/ab50.log 2>&1; echo "ab rc=$?"; sed 's/auto runs \[[^]]*\]//' $OUT/main/ab50.log | cut -c1-100; date
