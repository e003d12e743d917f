# TPC-H SF 10 with nvCOMP, part 1: nvCOMP and tpchgen installed into /tmp/hetdb-site (kept while the machine is held), data generated
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen tpch-sf10 tpch --sf 10
timeout -k 5 200 python3 -m hetdb.cli.main bench tpch --sf 10 --db $B/tpch-sf10 --device gpu --mode warm --repeat 3 --vs none --out $OUT/main/tpch-nv > $OUT/main/tpch-nv.log 2>&1; echo "bench rc=$?"
grep -E "^  q|mode" $OUT/main/tpch-nv.log | cut -c1-120; rm -f $OUT/main/tpch-nv/*.png; date
