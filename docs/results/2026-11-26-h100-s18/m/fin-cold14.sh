. ckpt/env.sh >/dev/null
export B
mkdir -p $OUT/cold14
timeout 90 python3 -m hetdb.cli.main bench ssb --sf 20 --db $B/ssb-sf20 --device gpu --mode cold --repeat 1 \
  --vs duckdb --out $OUT/cold14/ssb20-gpu-cold > $OUT/cold14/final-cold.log 2>&1; echo bench rc=$?
grep -E "ceiling|^  q|correct" $OUT/cold14/final-cold.log; grep -A 16 "Disk read rate" $OUT/cold14/ssb20-gpu-cold/report.md
