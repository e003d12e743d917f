# session 18 first call (main d6d702f): SSB SF 20 generated; cold read timelines, warm copy sizes, the q13 co-processing leak test
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main; date
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
timeout -k 5 170 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=long -rfE $(cat ckpt/final-tests17.txt) \
  > $OUT/main/tests.log 2>&1; echo "tests rc=$?"; tail -5 $OUT/main/tests.log | cut -c1-250
wait; grep "^gen" $OUT/main/gen-ssb.log; date
python3 -m hetdb.cli.main info > $OUT/main/info.log 2>&1; grep -iE "gds|direct|kvikio" $OUT/main/info.log | head
timeout 150 python3 ckpt/diag14.py $B/ssb-sf20 cold q1.1,q1.2,q1.3,q2.1,q2.3,q3.1,q3.3,q4.1,q4.3 > $OUT/main/reads.log 2>&1; echo "cold rc=$?"
grep -E "^q" $OUT/main/reads.log | cut -c1-300
timeout 90 python3 ckpt/diag14.py $B/ssb-sf20 warm q1.1,q2.1,q3.1,q4.1 > $OUT/main/copies.log 2>&1; echo "warm rc=$?"
grep -E "^q" $OUT/main/copies.log | cut -c1-400
date
