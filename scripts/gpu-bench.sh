#!/usr/bin/env bash
# Benchmarks on the GPU machine, from the repository root: `bash scripts/gpu-bench.sh STEP...`
# Steps: ssb-gpu SF | ssb-gpu-limit SF LIMIT | tpch-gpu SF | ssb-cpu SF | tpch-cpu SF
# Data sets are generated once into /tmp/hetdb-bench (kept while the machine stays up); reports go to
# /tmp/hetdb-bench-out/<step>, and as one archive $OUT/bench.tgz when $OUT is set.
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null && [ ! -d .site ]; then
  python3 -m pip install -q --no-index --no-deps --target .site .whl/*.whl || exit 1
fi
export PYTHONPATH="$PWD/.site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$PWD/.site/bin:$PATH" NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
data=/tmp/hetdb-bench
out=/tmp/hetdb-bench-out
mkdir -p "$data" "$out"
bench() { python3 -m hetdb.cli.main bench "$@"; }
while [ $# -gt 0 ]; do
  step=$1; sf=$2; shift 2
  case $step in
    ssb-gpu)  bench ssb --sf "$sf" --db "$data/ssb-sf$sf" --device gpu --mode hot,warm --repeat 3 \
                --vs duckdb --out "$out/ssb-gpu-sf$sf" ;;
    ssb-gpu-limit) limit=$1; shift
              bench ssb --sf "$sf" --db "$data/ssb-sf$sf" --device gpu --mode hot,warm --repeat 3 \
                --vs none --gpu-memory-limit "$limit" --out "$out/ssb-gpu-sf$sf-limit" ;;
    tpch-gpu) bench tpch --sf "$sf" --db "$data/tpch-sf$sf" --device gpu --mode hot,warm --repeat 3 \
                --vs duckdb --out "$out/tpch-gpu-sf$sf" ;;
    ssb-cpu)  bench ssb --sf "$sf" --db "$data/ssb-sf$sf" --device cpu --mode hot --repeat 3 \
                --vs duckdb --out "$out/ssb-cpu-sf$sf" ;;
    tpch-cpu) bench tpch --sf "$sf" --db "$data/tpch-sf$sf" --device cpu --mode hot --repeat 1 \
                --vs duckdb --out "$out/tpch-cpu-sf$sf" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "step $step sf $sf: exit $?"
done
if [ -n "${OUT:-}" ]; then tar czf "$OUT/bench.tgz" -C "$(dirname "$out")" "$(basename "$out")"; fi
