"""Session 18 diagnosis: cold read timelines and warm copy sizes (SSB SF 20, GPU).
usage: python3 ckpt/diag14.py DB cold|warm QUERIES"""
import sys, time, threading, statistics, collections
sys.path.insert(0, "scripts")
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.bench.environment import drop_os_cache
from hetdb.cache.host_cache import clear_shared_host_cache
import hetdb.io.direct as direct, hetdb.io.pool as pool, hetdb.backend.gpu.stream_io as sio

db, mode, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
LOG = []
on = [False]
T0 = [0.0]
_orig = direct.read_range
def logged(path, offset, length, out=None, alloc=None):
    t = time.perf_counter()
    r = _orig(path, offset, length, out=out, alloc=alloc)
    if on[0]:
        LOG.append((t - T0[0], time.perf_counter() - T0[0], length, threading.get_ident(), path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1]))
    return r
direct.read_range = logged; pool.read_range = logged; sio.read_range = logged
import cupy
rt = cupy.cuda.runtime
_mc = rt.memcpyAsync
COP = []
def mc(dst, src, n, kind, stream):
    if on[0]:
        COP.append((time.perf_counter() - T0[0], n, kind))
    return _mc(dst, src, n, kind, stream)
rt.memcpyAsync = mc

def busy_union(iv):
    iv = sorted(iv); tot = 0; cur_s = cur_e = None; gaps = []
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                tot += cur_e - cur_s
                if s - cur_e > 0.002: gaps.append((round(cur_e*1e3, 1), round((s-cur_e)*1e3, 1)))
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None: tot += cur_e - cur_s
    return tot, gaps

def inflight(iv, step=0.01, end=None):
    end = end or max(e for _, e in iv)
    out = []
    t = 0.0
    while t < end:
        out.append(sum(1 for s, e in iv if s <= t < e)); t += step
    return out

qs = load_queries("ssb", names)
for q in qs:
    # untimed first run: compiles, fills the host tier
    con = hetdb.connect(db, device="gpu", create=False); con.sql(q.sql).arrow(); con.close()
    for rep in range(2):
        if mode == "cold":
            clear_shared_host_cache(); drop = drop_os_cache([db])
        LOG.clear(); COP.clear()
        con = hetdb.connect(db, device="gpu", create=False)
        on[0] = True; T0[0] = time.perf_counter()
        con.sql(q.sql).arrow()
        tq = time.perf_counter() - T0[0]
        on[0] = False
        con.close()
    if mode == "cold":
        iv = [(s, e) for s, e, *_ in LOG]
        nb = sum(n for *_, n, _, _ in LOG)
        busy, gaps = busy_union(iv)
        sizes = sorted(n for *_, n, _, _ in LOG)
        thr = len({t for *_, t, _ in LOG})
        fl = inflight(iv, 0.01, tq)
        files = collections.Counter(f for *_, f in LOG)
        first = min(s for s, _ in iv); last = max(e for _, e in iv)
        print(f"{q.name} cold: query {tq*1e3:.1f} ms reads {len(LOG)} bytes {nb/1e6:.1f} MB = {nb/tq/1e9:.2f} GB/s of query; first read {first*1e3:.1f} last end {last*1e3:.1f} ms; disk busy (any read in flight) {busy*1e3:.1f} ms = {nb/busy/1e9:.2f} GB/s while busy; threads {thr}; read sizes min {sizes[0]} median {sizes[len(sizes)//2]} max {sizes[-1]}; in flight per 10 ms {fl}; gaps>2ms (at ms, ms) {gaps[:30]}")
        print(f"   files: {dict(files.most_common(12))}")
        per = collections.defaultdict(list)
        for s, e, n, t, f in LOG: per[f.split('/')[0]].append((s, e))
        for tab, v in per.items():
            print(f"   table {tab}: reads {len(v)} first {min(s for s,_ in v)*1e3:.1f} last end {max(e for _,e in v)*1e3:.1f} ms")
    else:
        h2d = [(t, n) for t, n, k in COP if k == 1]
        sizes = sorted(n for _, n in h2d)
        tot = sum(sizes)
        buckets = collections.Counter()
        for n in sizes:
            b = 1 << max(12, (n - 1).bit_length())
            buckets[b] += 1
        byb = collections.Counter()
        for n in sizes:
            byb[1 << max(12, (n - 1).bit_length())] += n
        print(f"{q.name} warm: query {tq*1e3:.1f} ms h2d copies {len(sizes)} bytes {tot/1e6:.1f} MB median {sizes[len(sizes)//2] if sizes else 0} "
              f"buckets(<=size: count/MB) {[(k, c, round(byb[k]/1e6,1)) for k, c in sorted(buckets.items())]}; first submit {h2d[0][0]*1e3 if h2d else -1:.2f} ms last submit {h2d[-1][0]*1e3 if h2d else -1:.2f} ms")
