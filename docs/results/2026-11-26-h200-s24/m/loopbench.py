import numpy as np, time
from numba import njit
rng = np.random.default_rng(1)
N = 1 << 20
NS, NC, ND = 10000, 150000, 2557
c0 = rng.integers(1, NS + 1, N).astype(np.int32)   # suppkey
c1 = rng.integers(1, NC + 1, N).astype(np.int32)   # custkey
c3 = rng.integers(0, ND, N).astype(np.int32)        # date index
c2 = rng.integers(1, 1000000, N).astype(np.int32)   # revenue
def bitmap(size, share):
    keep = rng.random(size) < share
    bits = np.zeros((size + 63) // 64, np.uint64)
    idx = np.flatnonzero(keep)
    for i in idx: bits[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    direct = np.full(size, -1, np.int32); direct[idx] = np.arange(len(idx))
    return bits, direct, keep
s_bits, s_dir, _ = bitmap(NS + 1, 0.2)
c_bits, c_dir, _ = bitmap(NC + 1, 0.2)
d_dir = np.arange(ND, dtype=np.int32)
s_nat = rng.integers(0, 25, NS + 1).astype(np.int64); c_nat = rng.integers(0, 25, NC + 1).astype(np.int64); d_year = rng.integers(0, 7, ND).astype(np.int64)

@njit(nogil=True, cache=False)
def v0(c0, c1, c2, c3, s_bits, s_dir, c_bits, c_dir, d_dir, s_nat, c_nat, d_year, acc):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t = np.int64(c0[i])
            ok = (t >= 0) & (t < s_dir.shape[0])
            w = s_bits[(t if ok else 0) >> 6]
            sel[k] = i
            k += np.int64(ok & (((w >> np.uint64(t & 63)) & np.uint64(1)) != np.uint64(0)))
        for j in range(k):
            i = sel[j]
            f0 = s_dir[np.int64(c0[i])]
            if f0 < 0: continue
            f1 = d_dir[np.int64(c3[i])]
            if f1 < 0: continue
            t5 = np.int64(c1[i])
            if (c_bits[t5 >> 6] >> np.uint64(t5 & 63)) & np.uint64(1) == np.uint64(0): continue
            f2 = c_dir[t5]
            if f2 < 0: continue
            g = (s_nat[c0[i]] * 25 + c_nat[t5]) * 7 + d_year[c3[i]]
            acc[g] += c2[i]
        b = e
    return acc

@njit(nogil=True, cache=False)
def v1(c0, c1, c2, c3, s_bits, s_dir, c_bits, c_dir, d_dir, s_nat, c_nat, d_year, acc):
    # both bitmap tests branch-free in the first pass; only rows passing both go on
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t = np.int64(c0[i]); u = np.int64(c1[i])
            ok = (t >= 0) & (t < s_dir.shape[0]) & (u >= 0) & (u < c_dir.shape[0])
            w = s_bits[(t if ok else 0) >> 6]; x = c_bits[(u if ok else 0) >> 6]
            sel[k] = i
            k += np.int64(ok & (((w >> np.uint64(t & 63)) & (x >> np.uint64(u & 63)) & np.uint64(1)) != np.uint64(0)))
        for j in range(k):
            i = sel[j]
            f0 = s_dir[np.int64(c0[i])]
            if f0 < 0: continue
            f1 = d_dir[np.int64(c3[i])]
            if f1 < 0: continue
            t5 = np.int64(c1[i])
            f2 = c_dir[t5]
            if f2 < 0: continue
            g = (s_nat[c0[i]] * 25 + c_nat[t5]) * 7 + d_year[c3[i]]
            acc[g] += c2[i]
        b = e
    return acc

@njit(nogil=True, cache=False)
def v2(c0, c1, c2, c3, s_bits, s_dir, c_bits, c_dir, d_dir, s_nat, c_nat, d_year, acc):
    # two passes: supplier bitmap then customer bitmap over the survivors (selection refined)
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t = np.int64(c0[i])
            ok = (t >= 0) & (t < s_dir.shape[0])
            w = s_bits[(t if ok else 0) >> 6]
            sel[k] = i
            k += np.int64(ok & (((w >> np.uint64(t & 63)) & np.uint64(1)) != np.uint64(0)))
        m = 0
        for j in range(k):
            i = sel[j]; u = np.int64(c1[i])
            ok = (u >= 0) & (u < c_dir.shape[0])
            x = c_bits[(u if ok else 0) >> 6]
            sel[m] = i
            m += np.int64(ok & (((x >> np.uint64(u & 63)) & np.uint64(1)) != np.uint64(0)))
        for j in range(m):
            i = sel[j]
            f0 = s_dir[np.int64(c0[i])]
            if f0 < 0: continue
            f1 = d_dir[np.int64(c3[i])]
            if f1 < 0: continue
            t5 = np.int64(c1[i])
            f2 = c_dir[t5]
            if f2 < 0: continue
            g = (s_nat[c0[i]] * 25 + c_nat[t5]) * 7 + d_year[c3[i]]
            acc[g] += c2[i]
        b = e
    return acc

args = (c0, c1, c2, c3, s_bits, s_dir, c_bits, c_dir, d_dir, s_nat, c_nat, d_year)
res = {}
for f in (v0, v1, v2):
    acc = np.zeros(25 * 25 * 7, np.int64); f(*args, acc)
    ts = []
    for _ in range(15):
        acc = np.zeros(25 * 25 * 7, np.int64); t = time.perf_counter(); f(*args, acc); ts.append(time.perf_counter() - t)
    res[f.__name__] = acc
    print(f.__name__, f"{np.median(ts)*1e3:.2f} ms per 1M rows")
assert all((res[k] == res["v0"]).all() for k in res)

@njit(nogil=True, cache=False)
def first_only(c0, s_bits, s_dir):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t = np.int64(c0[i])
            ok = (t >= 0) & (t < s_dir.shape[0])
            w = s_bits[(t if ok else 0) >> 6]
            sel[k] = i
            k += np.int64(ok & (((w >> np.uint64(t & 63)) & np.uint64(1)) != np.uint64(0)))
        tot += k
        b = e
    return tot

@njit(nogil=True, cache=False)
def mask_only(c0, s_bits, s_dir, out):
    n = c0.shape[0]
    for i in range(n):
        t = np.int64(c0[i])
        ok = (t >= 0) & (t < s_dir.shape[0])
        w = s_bits[(t if ok else 0) >> 6]
        out[i] = ok & (((w >> np.uint64(t & 63)) & np.uint64(1)) != np.uint64(0))
    return out

@njit(nogil=True, cache=False)
def sum_only(c2):
    s = 0
    for i in range(c2.shape[0]): s += c2[i]
    return s
for name, f, a in (("first pass", first_only, (c0, s_bits, s_dir)), ("mask only", mask_only, (c0, s_bits, s_dir, np.empty(N, np.bool_))), ("sum", sum_only, (c2,))):
    f(*a); ts = []
    for _ in range(15):
        t = time.perf_counter(); f(*a); ts.append(time.perf_counter() - t)
    print(name, f"{np.median(ts)*1e3:.2f} ms per 1M rows")
