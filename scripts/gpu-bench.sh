#!/usr/bin/env bash
# Benchmarks on the GPU machine, from the repository root: `bash scripts/gpu-bench.sh STEP...`
# Steps: gen-ssb SF | gen-tpch SF | ssb-gpu SF | ssb-gpu-noreuse SF | ssb-gpu-limit SF FRACTION |
#        tpch-gpu SF | ssb-cpu SF | tpch-cpu SF | ssb-cpu-t SF THREADS | tpch-cpu-t SF THREADS    (FRACTION: gpu_memory_limit as a share of the data, e.g. 0.1)
#        window-gpu SF | window-cpu-t SF THREADS   (the window suite over the tpch data set)
#        gen-ssb-none SF | gen-tpch-none SF   (plain pages: --compression none, into <suite>-sf<SF>-none)
#        ssb-gpu-cold SF | ssb-gpu-none SF | ssb-gpu-none-cold SF | ssb-gpu-none-limit SF FRACTION |
#        tpch-gpu-none SF   (issue 8: compressed vs plain pages, hot/warm/cold/limited, vs DuckDB)
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
    gen-ssb)  python3 -m hetdb.cli.main generate ssb --sf "$sf" "$data/ssb-sf$sf" ;;
    gen-tpch) python3 -m hetdb.cli.main generate tpch --sf "$sf" "$data/tpch-sf$sf" ;;
    gen-ssb-none)  python3 -m hetdb.cli.main generate ssb --sf "$sf" --compression none "$data/ssb-sf$sf-none" ;;
    gen-tpch-none) python3 -m hetdb.cli.main generate tpch --sf "$sf" --compression none "$data/tpch-sf$sf-none" ;;
    ssb-gpu-cold) bench ssb --sf "$sf" --db "$data/ssb-sf$sf" --device gpu --mode cold --repeat 3 \
                --vs duckdb --out "$out/ssb-gpu-sf$sf-cold" ;;
    ssb-gpu-none) bench ssb --sf "$sf" --db "$data/ssb-sf$sf-none" --device gpu --mode hot,warm --repeat 3 \
                --vs duckdb --out "$out/ssb-gpu-sf$sf-none" ;;
    ssb-gpu-none-cold) bench ssb --sf "$sf" --db "$data/ssb-sf$sf-none" --device gpu --mode cold --repeat 3 \
                --vs duckdb --out "$out/ssb-gpu-sf$sf-none-cold" ;;
    tpch-gpu-none) bench tpch --sf "$sf" --db "$data/tpch-sf$sf-none" --device gpu --mode hot,warm --repeat 3 \
                --vs duckdb --out "$out/tpch-gpu-sf$sf-none" ;;
    ssb-gpu-noreuse)
              bench ssb --sf "$sf" --db "$data/ssb-sf$sf" --device gpu --mode hot --repeat 3 --no-reuse \
                --vs none --out "$out/ssb-gpu-sf$sf-noreuse" ;;
    ssb-gpu-limit|ssb-gpu-none-limit) fraction=$1; shift
              db="$data/ssb-sf$sf"; [ "$step" = ssb-gpu-none-limit ] && db="$db-none"
              # one budget for both: the share of the plain data where it was generated (compressed
              # pages then fit more rows), else of the data as stored
              sized="$data/ssb-sf$sf-none"; [ -d "$sized" ] || sized="$db"
              limit=$(python3 -c "import sys; print(int(int(sys.argv[1]) * float(sys.argv[2])))" \
                      "$(du -sb "$sized" | cut -f1)" "$fraction")
              echo "gpu_memory_limit = $limit bytes ($fraction of $sized)"
              bench ssb --sf "$sf" --db "$db" --device gpu --mode hot,warm --repeat 3 \
                --vs duckdb --gpu-memory-limit "$limit" --out "$out/$step-sf$sf" ;;
    tpch-gpu) bench tpch --sf "$sf" --db "$data/tpch-sf$sf" --device gpu --mode hot,warm --repeat 3 \
                --vs duckdb --out "$out/tpch-gpu-sf$sf" ;;
    ssb-cpu)  bench ssb --sf "$sf" --db "$data/ssb-sf$sf" --device cpu --mode hot --repeat 3 \
                --vs duckdb --out "$out/ssb-cpu-sf$sf" ;;
    tpch-cpu) bench tpch --sf "$sf" --db "$data/tpch-sf$sf" --device cpu --mode hot --repeat 1 \
                --vs duckdb --out "$out/tpch-cpu-sf$sf" ;;
    ssb-cpu-t|tpch-cpu-t) threads=$1; shift; suite=${step%%-*}
              bench "$suite" --sf "$sf" --db "$data/$suite-sf$sf" --device cpu --mode hot --repeat 3 \
                --threads "$threads" --vs duckdb --out "$out/$suite-cpu-sf$sf-t$threads" ;;
    window-gpu) bench window --sf "$sf" --db "$data/tpch-sf$sf" --device gpu --mode hot --repeat 3 \
                --vs duckdb --out "$out/window-gpu-sf$sf" ;;
    window-cpu-t) threads=$1; shift
              bench window --sf "$sf" --db "$data/tpch-sf$sf" --device cpu --mode hot --repeat 3 \
                --threads "$threads" --vs duckdb --out "$out/window-cpu-sf$sf-t$threads" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "step $step sf $sf: exit $?"
done
if [ -n "${OUT:-}" ]; then tar czf "$OUT/bench.tgz" -C "$(dirname "$out")" "$(basename "$out")"; fi
