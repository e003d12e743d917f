# shared helpers for session 15 device scripts (sourced after ckpt/env.sh)
export B; mkdir -p $B
gen() {  # gen NAME ARGS... : generate into $B/NAME.part, rename on success (no half data set is ever reused)
  local name=$1; shift
  if [ -d $B/$name ]; then echo "exists $name"; return 0; fi
  rm -rf $B/$name.part
  local t0=$(date +%s)
  timeout 560 python3 -m hetdb.cli.main generate "$@" $B/$name.part > $OUT/main/gen-$name.log 2>&1
  local rc=$?
  [ $rc = 0 ] && mv $B/$name.part $B/$name
  echo "gen $name rc=$rc $(( $(date +%s) - t0 )) s $(du -sh $B/$name 2>/dev/null | cut -f1)"
}
hb() {  # hb TIMEOUT OUTNAME ARGS... : hetdb bench with a log under $OUT/main
  local t=$1 name=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 $t python3 -m hetdb.cli.main bench "$@" --out $OUT/main/$name > $OUT/main/$name.log 2>&1
  echo "bench $name rc=$? $(( $(date +%s) - t0 )) s"; grep -aE "geomean" $OUT/main/$name.log
  rm -f $OUT/main/$name/*.png
}
limit_of() { python3 -c "import sys; print(int(int(sys.argv[1]) * float(sys.argv[2])))" "$(du -sb $B/ssb-sf20-none | cut -f1)" "$1"; }
