# session 19: early-scan order A/B on both15 (deliver15 + plan15 at 06:50)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
date; nvidia-smi --query-gpu=name --format=csv,noheader
gen ssb-sf20 ssb --sf 20
rm -rf /tmp/br/x; mkdir -p /tmp/br/x/ckpt; tar cf - src tests scripts pyproject.toml | tar xf - -C /tmp/br/x; tar xJf ckpt/br/both15.tar.xz -C /tmp/br/x; cp ckpt/env.sh /tmp/br/x/ckpt/
cd /tmp/br/x && . ckpt/env.sh > /dev/null
timeout -k 5 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 \
  --variant base: --variant fd1:firstdeliveries=1 --variant fd1r3:firstdeliveries=1,primedramp=3 --variant ff0:factfirst=0 > $OUT/main/order.log 2>&1; echo "rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/order.log | sed -E 's/ \| (device cache|uploads|op ms|early scans|timed)[^|]*//g' | cut -c1-520
date
( cd $OUT && tar czf /tmp/x.tgz * && rm -rf $OUT/* && mv /tmp/x.tgz $OUT/ )
