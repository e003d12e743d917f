# session 20 checkpoint: main's warm A/B (query stream priority, tail ramp), then the helpers' checkpoint blocks
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
prep() { rm -rf /tmp/br/$1; mkdir -p /tmp/br/$1/ckpt $OUT/$1; tar cf - src tests scripts pyproject.toml Makefile docs/results/README.md | tar xf - -C /tmp/br/$1
  tar xJf ckpt/br/$1.tar.xz -C /tmp/br/$1; ( cd /tmp/br/$1 && xargs -r rm -f < $OLDPWD/ckpt/br/$1.del )
  sed -i "s/\"planloops\": (dense_tables, \"HOST_LOOPS\"), //" /tmp/br/$1/scripts/warm_timeline.py
  cp ckpt/env.sh /tmp/br/$1/ckpt/; cp ckpt/br/$1.sh /tmp/br/$1/step.sh; }
step() { ( cd /tmp/br/$1 && . ckpt/env.sh >/dev/null && export B && export OUT=$OUT/$1 && timeout -k 5 $2 bash step.sh ) > $OUT/$1/step-stdout.log 2>&1
  echo "$1 rc=$? $(date +%T)"; tail -${3:-14} $OUT/$1/step-stdout.log | cut -c1-250; }
gen ssb-sf20 ssb --sf 20
for n in "$@"; do prep $n; done
timeout -k 5 100 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 \
  --variant base: --variant noq:qprio=0 --variant noqt3:qprio=0,tail=3 > $OUT/main/tl.log 2>&1; echo "main tl rc=$?"
grep -E '^q[0-9.]+ |^geomean' $OUT/main/tl.log | cut -c1-120
for n in "$@"; do date; echo "=== $n"; step $n ${STEP_T:-100}; done
