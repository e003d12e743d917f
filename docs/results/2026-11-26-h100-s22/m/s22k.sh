# session 22 call K: warm benches with the GPU's clocks/power and the CPU's MHz logged every 100 ms (do slow stretches follow clocks?)
export OUT; . ckpt/env.sh; . ckpt/s16lib.sh; mkdir -p $OUT/main
cat ckpt/COMMIT; date
gen ssb-sf20 ssb --sf 20
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $OUT/main/smi.csv 2>&1 &
SMI=$!
( while true; do echo "$(date +%H:%M:%S.%N | cut -c1-12) $(awk '/MHz/{s+=$4;n++; if($4<m||m==0)m=$4} END{printf "%.0f min %.0f", s/n, m}' /proc/cpuinfo)"; sleep 0.1; done ) > $OUT/main/cpumhz.log 2>&1 &
CPU=$!
S="ssb --sf 20 --db $B/ssb-sf20 --device gpu"
python3 - <<'PY' > $OUT/main/runs.log 2>&1
import time, datetime, hetdb, statistics
from hetdb.bench.suites import load_queries
db = "/tmp/hetdb-bench/ssb-sf20"
qs = load_queries("ssb", None)
for q in qs:
    con = hetdb.connect(db, device="gpu", create=False); con.sql(q.sql).arrow(); con.close()
for rnd in range(3):
    for q in qs:
        for _ in range(5):
            con = hetdb.connect(db, device="gpu", create=False)
            r = con.sql(q.sql); r.arrow(); con.close()
            print(datetime.datetime.now().strftime("%H:%M:%S.%f")[:12], rnd, q.name, f"{r.stats['exec_seconds']*1e3:.2f}", flush=True)
PY
kill $SMI $CPU; sleep 0.5
python3 - <<'PY'
import statistics, collections
import os
runs = [l.split() for l in open(os.environ["OUT"] + "/main/runs.log") if l[:2].isdigit()]
by = collections.defaultdict(list)
for t, rnd, q, ms in runs: by[q].append(float(ms))
fast = {q: min(v) for q, v in by.items()}
slow = [(t, q, float(ms)) for t, rnd, q, ms in runs if float(ms) > 1.12 * fast[q]]
print(f"{len(runs)} runs, {len(slow)} over 1.12x their query's fastest")
print(" ".join(f"{q}:{min(v):.1f}-{max(v):.1f}" for q, v in by.items()))
PY
tail -3 $OUT/main/smi.csv; tail -2 $OUT/main/cpumhz.log; date
