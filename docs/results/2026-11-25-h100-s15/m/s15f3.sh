# final call 3 (merged main): cpu11 and rel11 final blocks; CPU 16 threads both suites (issue 11)
. ckpt/env.sh; . ckpt/s15lib.sh; mkdir -p $OUT/main $OUT/cpu11 $OUT/rel11; date
timeout -k 5 95 bash ckpt/fin-cpu11.sh > $OUT/cpu11/final-stdout.log 2>&1; echo "cpu11 rc=$?"; tail -12 $OUT/cpu11/final-stdout.log | cut -c1-220
for s in ssb:ssb-sf20 tpch:tpch-sf10; do
  timeout -k 5 150 python3 scripts/cpu_threads.py $B/${s#*:} ${s%%:*} --threads 16 --repeat 3 --json $OUT/main/${s%%:*}-t16.json > $OUT/main/${s%%:*}-t16.log 2>&1
  echo "${s%%:*} t16 rc=$?"; grep -aE "^threads|BAD" $OUT/main/${s%%:*}-t16.log
done
timeout -k 5 100 bash ckpt/fin-rel11.sh > $OUT/rel11/final-stdout.log 2>&1; echo "rel11 rc=$?"; tail -12 $OUT/rel11/final-stdout.log | cut -c1-220
date
( cd $OUT && tar czf /tmp/f3.tgz * && rm -rf $OUT/* && mv /tmp/f3.tgz $OUT/ )
