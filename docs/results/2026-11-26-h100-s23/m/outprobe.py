"""Where a slow warm run's time goes: python ckpt/outprobe.py DB ROUNDS
All 13 SSB queries warm (fresh connection), ROUNDS rounds, every run under cProfile. For runs slower than
1.6x the query's median so far (after 3 runs): its top functions by own and cumulative time, beside those of
the query's last ordinary run."""
import cProfile, pstats, io, sys, time, statistics
import hetdb
from hetdb.bench.suites import load_queries
db, rounds = sys.argv[1], int(sys.argv[2])
qs = load_queries("ssb", None)
for q in qs:
    con = hetdb.connect(db, device="gpu", create=False); con.sql(q.sql).arrow(); con.close()
hist = {q.name: [] for q in qs}
last_ok, slow = {}, []
for r in range(rounds):
    for q in qs:
        con = hetdb.connect(db, device="gpu", create=False)
        p = cProfile.Profile()
        t = time.perf_counter(); p.enable(); con.sql(q.sql).arrow(); p.disable(); ms = (time.perf_counter() - t) * 1e3
        con.close()
        h = hist[q.name]
        if len(h) >= 3 and ms > 1.6 * statistics.median(h):
            slow.append((q.name, ms, statistics.median(h), p))
        else:
            last_ok[q.name] = (ms, p)
        h.append(ms)
print("medians", {k: round(statistics.median(v), 1) for k, v in hist.items()})
print("slow runs", [(n, round(ms, 1), round(m, 1)) for n, ms, m, _ in slow])
def top(p, key, n=22):
    out = io.StringIO(); pstats.Stats(p, stream=out).sort_stats(key).print_stats(n)
    return "\n".join(l for l in out.getvalue().splitlines()[6:] if l.strip())
for n, ms, m, p in slow[:5]:
    print(f"===== SLOW {n} {ms:.1f} ms (median {m:.1f}) by own time\n{top(p, 'tottime')}\n----- by cumulative\n{top(p, 'cumulative', 40)}")
    if n in last_ok:
        print(f"===== ORDINARY {n} {last_ok[n][0]:.1f} ms by own time\n{top(last_ok[n][1], 'tottime', 12)}")
