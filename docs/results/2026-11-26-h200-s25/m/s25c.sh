cat ckpt/COMMIT; . ckpt/env.sh >/dev/null 2>&1; . ckpt/s16lib.sh; mkdir -p $OUT/main
gen ssb-sf50 ssb --sf 50
timeout -k 5 300 python3 ckpt/codiag.py $B/ssb-sf50 22 q1.1,q2.1,q3.1 2>&1 | tee $OUT/main/diag.log | cut -c1-300 | tail -70
