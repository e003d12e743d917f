# session 19 call B: sampling host profile of warm runs (where the host time before the fact kernels goes)
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
timeout 200 python3 scripts/warm_host_profile.py $B/ssb-sf20 --queries q3.1,q2.1,q1.1,q4.1 --runs 5 --every-us 100 --top 60 > $OUT/main/prof-warm.log 2>&1; echo "prof rc=$?"
timeout 120 python3 scripts/warm_host_profile.py $B/ssb-sf20 --queries q3.1,q2.1 --runs 5 --every-us 100 --top 60 --hot --set gpu_memory_limit=873683546 > $OUT/main/prof-l10.log 2>&1; echo "prof10 rc=$?"
timeout 150 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q3.1,q1.1 --runs 5 --deliveries > $OUT/main/tl.log 2>&1; echo "tl rc=$?"
grep -E '^q' $OUT/main/tl.log | cut -c1-300
head -c 3000 $OUT/main/prof-warm.log
date
( cd $OUT && tar czf /tmp/b.tgz * && rm -rf $OUT/* && mv /tmp/b.tgz $OUT/ )
