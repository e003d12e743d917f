# checkpoint call 1: each helper's branch head (ckpt/br/<name>.tar.xz) runs its GPU-RUN.md checkpoint
# block (ckpt/br/<name>.sh) in /tmp/br/<name>, one after another.
. ckpt/env.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for n in "$@"; do
  rm -rf /tmp/br/$n; mkdir -p /tmp/br/$n/ckpt $OUT/$n; tar xJf ckpt/br/$n.tar.xz -C /tmp/br/$n
  cp ckpt/env.sh /tmp/br/$n/ckpt/; cp ckpt/gen_once.py /tmp/gen_once.py; cp ckpt/br/$n.sh /tmp/br/$n/step.sh
done
for n in "$@"; do
  date; echo "=== $n"
  ( cd /tmp/br/$n && . ckpt/env.sh >/dev/null && timeout -k 5 100 bash step.sh ) > $OUT/$n/step-stdout.log 2>&1
  echo "$n rc=$?"; tail -15 $OUT/$n/step-stdout.log | cut -c1-300
done
date
( cd $OUT && tar czf /tmp/s13k1.tgz * && rm -rf $OUT/* && mv /tmp/s13k1.tgz $OUT/ )
