import numpy as np, time
from numba import njit
rng = np.random.default_rng(1)
N = 1 << 20
NS = 10000
c0 = rng.integers(1, NS + 1, N).astype(np.int32)
keep = rng.random(NS + 1) < 0.2
bits = np.zeros((NS + 64) // 64, np.uint64)
for i in np.flatnonzero(keep): bits[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
byte = keep.astype(np.uint8)

@njit(nogil=True, cache=False)
def bit_sel(c0, bits, size):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t = np.int64(c0[i])
            ok = (t >= 0) & (t < size)
            w = bits[(t if ok else 0) >> 6]
            sel[k] = i
            k += np.int64(ok & (((w >> np.uint64(t & 63)) & np.uint64(1)) != np.uint64(0)))
        tot += k; b = e
    return tot

@njit(nogil=True, cache=False)
def byte_sel(c0, byte):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0; size = byte.shape[0]
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t = np.int64(c0[i])
            u = np.uint64(t)
            v = byte[u if u < np.uint64(size) else np.uint64(0)]  # (slot 0 holds 0 here)
            sel[k] = i
            k += np.int64(v)
        tot += k; b = e
    return tot

@njit(nogil=True, cache=False)
def bit_sel2(c0, bits, size):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    for_size = np.uint64(size)
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            u = np.uint64(np.int64(c0[i]))
            u = u if u < for_size else np.uint64(0)
            w = bits[u >> np.uint64(6)]
            sel[k] = i
            k += np.int64((w >> (u & np.uint64(63))) & np.uint64(1))
        tot += k; b = e
    return tot

@njit(nogil=True, cache=False)
def bit_mask(c0, bits, size, out):
    n = c0.shape[0]
    for_size = np.uint64(size)
    for i in range(n):
        u = np.uint64(np.int64(c0[i]))
        u = u if u < for_size else np.uint64(0)
        out[i] = np.uint8((bits[u >> np.uint64(6)] >> (u & np.uint64(63))) & np.uint64(1))
    return out

for name, f, a in (("bit_sel (generated shape)", bit_sel, (c0, bits, NS + 1)), ("byte_sel", byte_sel, (c0, byte)),
                   ("bit_sel2 (unsigned)", bit_sel2, (c0, bits, NS + 1)), ("bit_mask", bit_mask, (c0, bits, NS + 1, np.empty(N, np.uint8)))):
    r = f(*a); ts = []
    for _ in range(21):
        t = time.perf_counter(); f(*a); ts.append(time.perf_counter() - t)
    print(f"{name:28s} {np.median(ts)*1e3:.2f} ms per 1M rows", r if not isinstance(r, np.ndarray) else r.sum())

@njit(nogil=True, cache=False)
def bit_sel3(c0, bits, lo, size):
    # the generated form rewritten: unsigned offset (negative wraps past the size), clamped index, bool test
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            d = np.uint64(np.int64(c0[i]) - lo)
            d_in = d < np.uint64(size)
            d_u = d if d_in else np.uint64(0)
            d_w = bits[d_u >> np.uint64(6)]
            sel[k] = i
            k += np.int64(d_in & (((d_w >> (d_u & np.uint64(63))) & np.uint64(1)) != np.uint64(0)))
        tot += k; b = e
    return tot

@njit(nogil=True, cache=False)
def bit_sel4(c0, c1, bits, lo, size):
    # with a second (filter) condition joined by & as the generator does
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t2 = np.int64(c1[i]) < 25
            d = np.uint64(np.int64(c0[i]) - lo)
            d_in = d < np.uint64(size)
            d_u = d if d_in else np.uint64(0)
            d_w = bits[d_u >> np.uint64(6)]
            sel[k] = i
            k += np.int64((t2) & d_in & (((d_w >> (d_u & np.uint64(63))) & np.uint64(1)) != np.uint64(0)))
        tot += k; b = e
    return tot

@njit(nogil=True, cache=False)
def bit_sel4_old(c0, c1, bits, lo, size):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t2 = np.int64(c1[i]) < 25
            d = np.int64(c0[i]) - lo
            d_in = (d >= 0) & (d < size)
            d_w = bits[(d if d_in else 0) >> 6]
            sel[k] = i
            k += np.int64((t2) & d_in & (((d_w >> np.uint64(d & 63)) & np.uint64(1)) != np.uint64(0)))
        tot += k; b = e
    return tot
c1 = rng.integers(1, 51, N).astype(np.int32)
for name, f, a in (("bit_sel3 (rewritten, bool)", bit_sel3, (c0, bits, 0, NS + 1)),
                   ("with filter, old", bit_sel4_old, (c0, c1, bits, 0, NS + 1)), ("with filter, new", bit_sel4, (c0, c1, bits, 0, NS + 1))):
    r = f(*a); ts = []
    for _ in range(21):
        t = time.perf_counter(); f(*a); ts.append(time.perf_counter() - t)
    print(f"{name:28s} {np.median(ts)*1e3:.2f} ms per 1M rows", r)

@njit(nogil=True, cache=False)
def bit_sel5(c0, c1, bits, lo, size):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            t2 = np.int64(c1[i]) < 25
            d = np.uint64(np.int64(c0[i]) - lo)
            d_in = d < np.uint64(size)
            d_u = d if d_in else np.uint64(0)
            d_t = np.int64((bits[d_u >> np.uint64(6)] >> (d_u & np.uint64(63))) & np.uint64(1)) & np.int64(d_in)
            sel[k] = i
            k += np.int64(t2) & d_t
        tot += k; b = e
    return tot

@njit(nogil=True, cache=False)
def bit_sel6(c0, bits, lo, size):
    n = c0.shape[0]; sel = np.empty(1024, np.int64); b = 0; tot = 0
    while b < n:
        e = min(b + 1024, n); k = 0
        for i in range(b, e):
            d = np.uint64(np.int64(c0[i]) - lo)
            d_in = d < np.uint64(size)
            d_u = d if d_in else np.uint64(0)
            d_t = np.int64((bits[d_u >> np.uint64(6)] >> (d_u & np.uint64(63))) & np.uint64(1)) & np.int64(d_in)
            sel[k] = i
            k += d_t
        tot += k; b = e
    return tot
for name, f, a in (("int form, with filter", bit_sel5, (c0, c1, bits, 0, NS + 1)), ("int form alone", bit_sel6, (c0, bits, 0, NS + 1))):
    r = f(*a); ts = []
    for _ in range(21):
        t = time.perf_counter(); f(*a); ts.append(time.perf_counter() - t)
    print(f"{name:28s} {np.median(ts)*1e3:.2f} ms per 1M rows", r)
