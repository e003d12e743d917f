# session 23 call H1: nvCOMP and tpchgen installed into /tmp/hetdb-site (kept while the machine is held), TPC-H SF 10 and SSB SF 20 generated
rm -rf .whl; mv .whl2 .whl
. ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen tpch-sf10 tpch --sf 10
gen ssb-sf20 ssb --sf 20
ls $B; date
