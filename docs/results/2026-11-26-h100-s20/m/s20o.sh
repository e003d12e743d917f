. ckpt/env.sh; mkdir -p $OUT
for t in base:  keyless:keyless_join  rows:row_sinks  semi:right_semi_anti  strjoin:string_join_keys; do
  tag=${t%%:*}; off=${t#*:}
  ( cd tests/exec && TAG=$tag HETDB_GPU_COMPILE_OFF=$off timeout 60 python3 -m pytest -q -p no:cacheprovider -x test_zz_diag20.py > $OUT/pytest-$tag.log 2>&1; echo "$tag rc=$?" )
  grep -E "^duck|^share" $OUT/diag-$tag.txt | cut -c1-200
done
