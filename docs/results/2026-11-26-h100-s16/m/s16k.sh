# session 16 checkpoint call: data sets generated in the background while the helper branches' checkpoint blocks
# (ckpt/br/<name>.sh over /tmp/br/<name>) run one after another; then main's placement test and SSB SF 20 at 25%
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
prep() { rm -rf /tmp/br/$1; mkdir -p /tmp/br/$1/ckpt $OUT/$1; cp -r src tests scripts docs pyproject.toml Makefile /tmp/br/$1/
  tar xJf ckpt/br/$1.tar.xz -C /tmp/br/$1; ( cd /tmp/br/$1 && xargs -r rm -f < $OLDPWD/ckpt/br/$1.del )
  cp ckpt/env.sh /tmp/br/$1/ckpt/; cp ckpt/br/$1.sh /tmp/br/$1/step.sh; }
step() { ( cd /tmp/br/$1 && . ckpt/env.sh >/dev/null && export B && timeout -k 5 $2 bash step.sh ) > $OUT/$1/step-stdout.log 2>&1
  echo "$1 rc=$? $(date +%T)"; tail -${3:-14} $OUT/$1/step-stdout.log | cut -c1-250; }
( gen ssb-sf20 ssb --sf 20 ) > $OUT/main/gen-ssb.log 2>&1 &
( gen tpch-sf10 tpch --sf 10 ) > $OUT/main/gen-tpch.log 2>&1 &
for n in "$@"; do prep $n; done
for n in "$@"; do date; echo "=== $n"; step $n ${STEP_T:-75}; done
timeout -k 5 60 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/exec/test_gpu_decoded_placement.py > $OUT/main/placement.log 2>&1
echo "placement rc=$?"; tail -3 $OUT/main/placement.log
wait; cat $OUT/main/gen-*.log; date
timeout -k 5 60 python3 scripts/plan_startup.py $B/ssb-sf20 --device gpu --repeat 5 > $OUT/main/plan-startup.log 2>&1; echo "plan startup rc=$?"; tail -16 $OUT/main/plan-startup.log
hb 120 ssb20-gpu-l25 ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode hot,warm --repeat 3 --vs duckdb --gpu-memory-limit 2184208865
date
( cd $OUT && tar czf /tmp/k.tgz * && rm -rf $OUT/* && mv /tmp/k.tgz $OUT/ )
