# bisect the top-N wrong answer (test_gpu_compiled_paged topn) over this session's commits
. ckpt/env.sh
for c in 465fec9 0de9838 ec3b187 d6b8b72; do rm -rf /tmp/br/$c; mkdir -p /tmp/br/$c; tar xJf ckpt/br/$c.tar.xz -C /tmp/br/$c; done
for c in 465fec9 0de9838 ec3b187 d6b8b72; do
  ( cd /tmp/br/$c && PYTHONPATH=$S:$PWD/src timeout -k 5 170 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=line \
      tests/exec/test_gpu_compiled_paged.py -k "topn or sort_gathers" > $OUT/topn-$c.log 2>&1; echo "$c rc=$?" ) &
done
wait
for c in 465fec9 0de9838 ec3b187 d6b8b72; do echo "== $c"; grep -E "passed|failed|^E |Error" $OUT/topn-$c.log | cut -c1-250 | head -6; done
