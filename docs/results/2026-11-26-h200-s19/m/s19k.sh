# session 19 checkpoint call: SSB SF 20 generated, the disk probe, then the helper branches' checkpoint blocks
# (ckpt/br/<name>.sh over /tmp/br/<name> = this tree (main) overlaid with the branch's delta) one after another
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
prep() { rm -rf /tmp/br/$1; mkdir -p /tmp/br/$1/ckpt $OUT/$1; tar cf - src tests scripts pyproject.toml Makefile docs/results/README.md | tar xf - -C /tmp/br/$1
  tar xJf ckpt/br/$1.tar.xz -C /tmp/br/$1; ( cd /tmp/br/$1 && xargs -r rm -f < $OLDPWD/ckpt/br/$1.del )
  cp ckpt/env.sh /tmp/br/$1/ckpt/; cp ckpt/br/$1.sh /tmp/br/$1/step.sh; }
step() { ( cd /tmp/br/$1 && . ckpt/env.sh >/dev/null && export B && export OUT=$OUT/$1 && timeout -k 5 $2 bash step.sh ) > $OUT/$1/step-stdout.log 2>&1
  echo "$1 rc=$? $(date +%T)"; tail -${3:-14} $OUT/$1/step-stdout.log | cut -c1-250; }
gen ssb-sf20 ssb --sf 20
timeout -k 5 60 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode warm --repeat 3 --vs none --out $OUT/main/bw > $OUT/main/bw.log 2>&1; echo "main bench rc=$?"; grep -E "^  q|mode" $OUT/main/bw.log; rm -f $OUT/main/bw/*.png
for n in "$@"; do prep $n; done
for n in "$@"; do date; echo "=== $n"; step $n ${STEP_T:-75}; done
wait; cat $OUT/main/gen-*.log; date
( cd $OUT && tar czf /tmp/k.tgz * && rm -rf $OUT/* && mv /tmp/k.tgz $OUT/ )
