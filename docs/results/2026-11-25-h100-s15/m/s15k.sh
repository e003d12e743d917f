# checkpoint call: helper branches' checkpoint blocks (ckpt/br/<name>.sh) in /tmp/br/<name>, one after another;
# BG names run in the background meanwhile (rel10's CPU fuzz campaign: no GPU)
. ckpt/env.sh; . ckpt/s15lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
prep() { rm -rf /tmp/br/$1; mkdir -p /tmp/br/$1/ckpt $OUT/$1; cp -r src tests scripts pyproject.toml /tmp/br/$1/
  tar xJf ckpt/br/$1.tar.xz -C /tmp/br/$1; ( cd /tmp/br/$1 && xargs -r rm -f < $OLDPWD/ckpt/br/$1.del )
  mkdir -p /tmp/br/$1/docs/results; cp -r docs/results/2026-11-25-rel9 /tmp/br/$1/docs/results/; cp ckpt/env.sh /tmp/br/$1/ckpt/; cp ckpt/br/$1.sh /tmp/br/$1/step.sh; }
step() { ( cd /tmp/br/$1 && . ckpt/env.sh >/dev/null && export B && timeout -k 5 $2 bash step.sh ) > $OUT/$1/step-stdout.log 2>&1
  echo "$1 rc=$? $(date +%T)"; tail -${3:-14} $OUT/$1/step-stdout.log | cut -c1-250; }
for n in $BG "$@"; do prep $n; done
for n in $BG; do step $n 400 6 & done
for n in "$@"; do date; echo "=== $n"; step $n ${STEP_T:-130}; done
wait; date
( cd $OUT && tar czf /tmp/k.tgz * && rm -rf $OUT/* && mv /tmp/k.tgz $OUT/ )
