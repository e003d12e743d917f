#!/usr/bin/env bash
# Issue 11's measurement on the 16-core machine: SSB SF 20 and TPC-H SF 10 on the CPU, every query at 1, 4
# and 16 threads with DuckDB at the same thread count in the same run, then first-query latency of a fresh
# process with a cold and a warm kernel cache.
#
# Usage (from the repository root, after `source ckpt/env.sh`; data in $B/ssb-sf20 and $B/tpch-sf10, logs and
# bench directories under $OUT/issue11):
#   bash scripts/cpu_issue11.sh STEP [STEP ...]
# Steps (each one bench command; estimated wall on the H100 machine's 16 cores, loading DuckDB included):
#   ssb16 tpch16   ~1 min each         ssb4 tpch4   ~2-3 min each       ssb1 tpch1   ~5-8 min each
#   first          ~1 min (cold: every kernel compiled; warm: loaded from the on-disk cache)
#   summary        geomean per thread count, lowest queries, 1 -> 16 scaling (scripts/cpu_scaling.py)
# A step's bench writes $OUT/issue11/<suite>-t<threads>/ (results.json, report.md) and <name>.log.
# SSB_SF/SSB_DB and TPCH_SF/TPCH_DB set other data (a dry run on small data elsewhere).
set -u
O=${OUT:?set OUT}/issue11
SSB_SF=${SSB_SF:-20}; SSB_DB=${SSB_DB:-${B:-}/ssb-sf20}
TPCH_SF=${TPCH_SF:-10}; TPCH_DB=${TPCH_DB:-${B:-}/tpch-sf10}
mkdir -p "$O"
PY=${PY:-python3}

bench() {  # suite sf db threads
    local name=$1-t$4
    $PY -m hetdb.cli.main bench "$1" --sf "$2" --db "$3" --device cpu --vs duckdb --mode hot --repeat 3 \
        --threads "$4" --disk-test-mb 64 --out "$O/$name" > "$O/$name.log" 2>&1
    echo "$name rc=$?"
    grep -E "geomean|correct" "$O/$name.log" | tail -1
}

for step in "$@"; do
    case $step in
        ssb1|ssb4|ssb16) bench ssb "$SSB_SF" "$SSB_DB" "${step#ssb}" ;;
        tpch1|tpch4|tpch16) bench tpch "$TPCH_SF" "$TPCH_DB" "${step#tpch}" ;;
        first)
            cold=$(mktemp -d /tmp/issue11-kcache.XXXX)
            for what in cold warm; do  # (the same empty cache directory: compiled, then loaded)
                XDG_CACHE_HOME=$cold $PY scripts/first_query.py "$SSB_DB" 16 > "$O/first-$what.log" 2>&1
                echo "first $what rc=$?: $(tail -1 "$O/first-$what.log")"
            done
            rm -rf "$cold" ;;
        summary)
            for s in ssb tpch; do
                dirs=$(ls -d "$O/$s"-t* 2>/dev/null | grep -v '\.log$')
                [ -n "$dirs" ] && $PY scripts/cpu_scaling.py $dirs
            done ;;
        *) echo "unknown step $step (ssb1 ssb4 ssb16 tpch1 tpch4 tpch16 first summary)"; exit 2 ;;
    esac
done
