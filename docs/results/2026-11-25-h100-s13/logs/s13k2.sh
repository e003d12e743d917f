# checkpoint call 2: main's whole gpu-marked suite, in parallel groups
. ckpt/env.sh
git log --oneline -1 2>/dev/null; date
( timeout 120 python3 -m hetdb.cli.main generate ssb --sf 2 /tmp/warm9-ssb2 > /dev/null 2>&1; echo gen2 rc=$?
  timeout 100 python3 -m hetdb.cli.main generate tpch --sf 1 /tmp/cpu9-sf1 >/dev/null 2>&1; echo gen tpch1 rc=$?
  timeout 60 python3 -m hetdb.cli.main generate ssb --sf 1 /tmp/gpu9-ssb1 >/dev/null 2>&1; echo gen ssb1 rc=$? ) &
bash ckpt/s13sweep.sh $OUT/main
wait
date
( cd $OUT && tar czf /tmp/s13k2.tgz * && rm -rf $OUT/* && mv /tmp/s13k2.tgz $OUT/ )
