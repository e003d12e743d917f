"""Window-function kernels as array-module code: every function takes ``xp`` (NumPy or CuPy) arrays
and runs the same algorithm on the host or on a GPU. ``ArrayKernels(xp)`` offers them under the names
and signatures of the CPU's compiled loops (``backend/cpu/window``), so the window operator drives
either one.

Rows arrive sorted by partition and order keys, with flags where a partition and a peer group begin.
Per-row boundaries come from a cumulative sum of the flags (the segment id) gathering each segment's
first row; frames are half-open row ranges ``[fs, fe)`` clamped to the partition; RANGE offsets are
found by a vectorised binary search inside each row's non-NULL run; frame sums come from prefix sums
(exact for integers and decimals; float sums per partition by a doubling scan, so that one partition's
running sum carries no rounding of the partitions before it); frame min/max from a sparse table built
one level at a time (O(n) memory, O(n log w) work for frames of width up to w). No step loops over
rows or partitions in Python.
"""

from __future__ import annotations

from typing import Any

from hetdb.backend.cpu.window import BOUND_CODES

__all__ = ["BOUND_CODES", "ArrayKernels", "float_order_key"]

_DIRECT_SUM_WIDTH = 32  # as the compiled loops: float frames this narrow are summed row by row
_FLIP = 0x7FFFFFFFFFFFFFFF


def float_order_key(xp: Any, x: Any) -> Any:
    """int64 whose signed order is DuckDB's order of the doubles ``x`` (-0.0 == 0.0, NaN above +inf
    and equal to every NaN)."""
    x = x.astype(xp.float64) + 0.0  # -0.0 + 0.0 is 0.0
    x = xp.where(xp.isnan(x), xp.float64("nan"), x)
    bits = x.view(xp.int64)
    return xp.where(bits < 0, bits ^ xp.int64(_FLIP), bits)


def _segments(xp: Any, start: Any) -> tuple[Any, Any]:
    """Per row: the first row of its segment and the end (exclusive); ``start[0]`` is set."""
    n = start.shape[0]
    heads = xp.flatnonzero(start).astype(xp.int64)
    seg = xp.cumsum(start, dtype=xp.int64) - 1
    ends = xp.concatenate([heads[1:], xp.full(1, n, dtype=xp.int64)])
    return heads[seg], ends[seg]


def _argsort_stable(xp: Any, code: Any) -> Any:
    # CuPy's argsort is a stable radix sort (thrust stable_sort_by_key on int64 keys); NumPy's needs
    # asking for one
    if xp.__name__ == "numpy":
        return xp.argsort(code, kind="stable")
    return xp.argsort(code)


def _chunks(spans: list[tuple[int, int]], keep: list[int]) -> list[list[int]]:
    """The keys ``keep`` (most significant first) in groups that each pack into 63 bits, from the
    least significant key."""
    chunks: list[list[int]] = [[]]
    bits = 0
    for i in reversed(keep):
        width = min(spans[i][1].bit_length(), 64)  # 64: the key itself (it may span every int64)
        if chunks[-1] and bits + width > 63:
            chunks.append([])
            bits = 0
        chunks[-1].insert(0, i)
        bits += width
    return chunks


def _pack(xp: Any, keys: list[Any], spans: list[tuple[int, int]], chunk: list[int], order: Any) -> tuple[Any, int]:
    """One int64 code per row ordering like the keys ``chunk`` (rows permuted by ``order`` if given),
    and the number of bits it uses."""
    code = None
    bits = 0
    for i in chunk:
        lo, w = spans[i]
        k = keys[i] if order is None else keys[i][order]
        if w.bit_length() >= 63:
            code, bits = k, 64
        else:
            shifted = k - lo
            code = shifted if code is None else (code << w.bit_length()) | shifted
            bits += w.bit_length()
    return code, bits


def _is_sorted(code: Any) -> bool:
    return not bool((code[1:] < code[:-1]).any())


class ArrayKernels:
    """The window kernels over the array module ``xp``."""

    def __init__(self, xp: Any, segment_sort: Any = None, segment_rows: int = 64) -> None:
        self.xp = xp
        # (code, partition heads, n) -> each partition's rows ordered by code (GPU: one thread each)
        self.segment_sort = segment_sort
        self.segment_rows = segment_rows

    def sort_permutation(self, arrays: list[Any], desc: list[bool], n: int, n_part: int = 0) -> Any | None:
        """Stable order of the rows by ``arrays`` (int64 or bool sort keys, the first the most
        significant, the first ``n_part`` the PARTITION BY keys; ``desc`` reverses one), None where
        they are in that order already. The keys are shifted by their minimum and packed into as few
        int64 codes as their ranges allow, each code one stable radix argsort from the least
        significant (one sort when they fit 63 bits together, instead of a comparison sort over every
        key; 32-bit codes where they fit: half the radix passes); a last key the input is
        sorted by already is left out (the stable sorts keep input order among its ties). Rows already
        grouped by small partitions are sorted partition by partition (``segment_sort``)."""
        xp = self.xp
        if not arrays or n == 0:
            return None
        keys = [xp.bitwise_not(k.astype(xp.int64)) if d else k.astype(xp.int64) for k, d in zip(arrays, desc)]
        bounds = xp.stack([f(k) for k in keys for f in (xp.min, xp.max)]).tolist()
        spans = [(bounds[2 * i], bounds[2 * i + 1] - bounds[2 * i]) for i in range(len(keys))]
        keep = [i for i, (_, w) in enumerate(spans) if w > 0]  # a constant key orders nothing
        if keep and not bool((keys[keep[-1]][1:] < keys[keep[-1]][:-1]).any()):
            keep.pop()
        if not keep:
            return None
        chunks = _chunks(spans, keep)
        first = None
        if len(chunks) == 1:
            first = _pack(xp, keys, spans, chunks[0], None)
            if _is_sorted(first[0]):
                return None  # stored in this order already (lineitem by l_orderkey, l_linenumber)
        if self.segment_sort is not None and 0 < n_part:
            order = self._sort_within_partitions(keys, spans, keep, n_part, n)
            if order is not None:
                return order
        order = None
        for chunk in chunks:
            code, bits = first if first is not None else _pack(xp, keys, spans, chunk, order)
            first = None
            step = _argsort_stable(xp, code.astype(xp.uint32) if bits <= 32 else code)
            order = step if order is None else order[step]
        return order.astype(xp.int64, copy=False)

    def _sort_within_partitions(self, keys: list[Any], spans: list[tuple[int, int]], keep: list[int],
                                n_part: int, n: int) -> Any | None:
        """The sort order where the rows are grouped by the PARTITION BY keys already and no partition
        is longer than ``segment_rows``: each partition sorted on its own by the ORDER BY keys; None
        where that does not apply (or the keys do not fit one code each)."""
        xp = self.xp
        part, rest = [i for i in keep if i < n_part], [i for i in keep if i >= n_part]
        if not part or not rest or len(_chunks(spans, part)) > 1 or len(_chunks(spans, rest)) > 1:
            return None
        pcode, _ = _pack(xp, keys, spans, part, None)
        if not _is_sorted(pcode):
            return None
        heads = xp.flatnonzero(pcode[1:] != pcode[:-1]) + 1
        ends = xp.concatenate([heads, xp.full(1, n, dtype=heads.dtype)])
        starts = xp.concatenate([xp.zeros(1, dtype=heads.dtype), heads])
        if int((ends - starts).max()) > self.segment_rows:
            return None
        code, _ = _pack(xp, keys, spans, rest, None)
        return self.segment_sort(code, starts.astype(xp.int64), n)

    def _rows(self, n: int) -> Any:
        return self.xp.arange(n, dtype=self.xp.int64)

    def run_bounds(self, flags: Any) -> tuple[Any, Any]:
        """Per row: start and end (exclusive) of its run, runs starting where ``flags`` is set."""
        if flags.shape[0] == 0:
            e = self.xp.zeros(0, dtype=self.xp.int64)
            return e, e
        return _segments(self.xp, flags)

    def boundaries(self, part_start: Any, peer_start: Any) -> tuple[Any, Any, Any, Any]:
        """Per row: partition start/end and peer-group start/end (ends exclusive)."""
        xp = self.xp
        if part_start.shape[0] == 0:
            e = xp.zeros(0, dtype=xp.int64)
            return e, e, e, e
        ps, pe = _segments(xp, part_start)
        gs, ge = _segments(xp, part_start | peer_start)
        return ps, pe, gs, ge

    def dense_rank(self, part_start: Any, peer_start: Any) -> Any:
        xp = self.xp
        if part_start.shape[0] == 0:
            return xp.zeros(0, dtype=xp.int64)
        groups = xp.cumsum(part_start | peer_start, dtype=xp.int64)
        ps, _ = _segments(xp, part_start)
        return groups - groups[ps] + 1

    def ntile(self, ps: Any, pe: Any, buckets: int) -> Any:
        """DuckDB's NTILE: the first (rows mod buckets) tiles get one row more."""
        xp = self.xp
        total = pe - ps
        b = xp.minimum(total, buckets)
        size = total // xp.maximum(b, 1)
        large = total - b * size
        small_end = large * (size + 1)
        r = self._rows(ps.shape[0]) - ps
        return xp.where(r < small_end, 1 + r // (size + 1),
                        1 + large + (r - small_end) // xp.maximum(size, 1))

    def shifted(self, ps: Any, pe: Any, shift: int) -> Any:
        """Row i + shift when it lies in i's partition, else -1 (lag: negative shift, lead: positive)."""
        xp = self.xp
        j = self._rows(ps.shape[0]) + shift
        return xp.where((j >= ps) & (j < pe), j, -1)

    def _bound(self, code: int, off: Any, ps: Any, pe: Any, gs: Any, ge: Any, is_end: bool) -> Any:
        xp = self.xp
        if code == 0:
            return ps
        if code == 4:
            return pe
        if code == 2:
            return ge if is_end else gs
        rows = self._rows(ps.shape[0])
        j = rows - off if code == 1 else rows + off
        if is_end:
            j = j + 1
        return xp.minimum(xp.maximum(j, ps), pe)

    def rows_frame(self, ps: Any, pe: Any, s_code: int, s_off: int, e_code: int, e_off: int) -> tuple[Any, Any]:
        rows = self._rows(ps.shape[0])
        fs = self._bound(s_code, s_off, ps, pe, rows, rows + 1, False)
        fe = self._bound(e_code, e_off, ps, pe, rows, rows + 1, True)
        return fs, self.xp.maximum(fe, fs)

    def _search(self, w: Any, lo: Any, hi: Any, x: Any, right: bool) -> Any:
        """Per row: the first index in [lo, hi) with w > x (``right``) or w >= x, w ascending there."""
        xp = self.xp
        n = w.shape[0]
        if n == 0:
            return lo
        steps = int((hi - lo).max()).bit_length()
        for _ in range(steps):
            active = lo < hi
            m = (lo + hi) >> 1
            wm = w[xp.minimum(m, n - 1)]
            go_right = (wm <= x) if right else (wm < x)
            lo = xp.where(active & go_right, m + 1, lo)
            hi = xp.where(active & ~go_right, m, hi)
        return lo

    def range_frame(self, ps: Any, pe: Any, gs: Any, ge: Any, w: Any, valid: Any, s_code: int, s_off: Any,
                    e_code: int, e_off: Any) -> tuple[Any, Any]:
        """RANGE frames over one ORDER BY key ``w`` (ascending: a DESC key arrives negated). Rows whose
        key is NULL frame their NULL peers for offset bounds."""
        xp = self.xp
        n = ps.shape[0]
        if n == 0:
            return ps, pe
        # the non-NULL rows of a partition form one run [a, b): NULLs sort first or last
        counts = self.prefix_counts(valid)
        nvalid = counts[pe] - counts[ps]
        a = xp.where(valid[ps], ps, pe - nvalid)
        b = a + nvalid
        if s_code in (1, 3):
            target = w - s_off if s_code == 1 else w + s_off
            fs = xp.where(valid, self._search(w, a, b, target, False), gs)
        else:
            fs = self._bound(s_code, 0, ps, pe, gs, ge, False)
        if e_code in (1, 3):
            target = w - e_off if e_code == 1 else w + e_off
            fe = xp.where(valid, self._search(w, a, b, target, True), ge)
        else:
            fe = self._bound(e_code, 0, ps, pe, gs, ge, True)
        return fs, xp.maximum(fe, fs)

    def partition_variance(self, x: Any, valid: Any, part_start: Any, ddof: int) -> tuple[Any, Any]:
        """Per row: the variance of its partition's valid values (``ddof`` 1: sample, 0: population)
        and whether the partition has more than ``ddof`` of them; two passes as the CPU's loop (the
        mean, then the squared deviations from it), each a per-partition sum by ``bincount``."""
        xp = self.xp
        n = x.shape[0]
        if n == 0:
            return xp.zeros(0, dtype=xp.float64), xp.zeros(0, dtype=bool)
        seg = xp.cumsum(part_start, dtype=xp.int64) - 1
        parts = int(seg[-1]) + 1
        cnt = xp.bincount(seg, weights=valid.astype(xp.float64), minlength=parts)
        total = xp.bincount(seg, weights=xp.where(valid, x, 0.0), minlength=parts)
        mean = total / xp.maximum(cnt, 1.0)
        dev = xp.where(valid, x - mean[seg], 0.0)
        m2 = xp.bincount(seg, weights=dev * dev, minlength=parts)
        ok = cnt > ddof
        var = xp.where(ok, m2 / xp.maximum(cnt - ddof, 1.0), 0.0)
        return var[seg], ok[seg]

    def prefix_counts(self, valid: Any) -> Any:
        xp = self.xp
        return xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(valid, dtype=xp.int64)])

    def frame_sum_int(self, x: Any, valid: Any, fs: Any, fe: Any) -> Any:
        """Exact integer frame sums through one prefix sum (int64 arithmetic wraps as the loops do)."""
        xp = self.xp
        v = xp.where(valid, x, 0).astype(xp.int64)
        pre = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(v, dtype=xp.int64)])
        return pre[fe] - pre[fs]

    def _partition_scan(self, v: Any, ps: Any) -> Any:
        """Inclusive running sums of ``v`` restarting at each partition (Hillis-Steele doubling)."""
        xp = self.xp
        n = v.shape[0]
        acc = v.copy()
        if n == 0:
            return acc
        rows = self._rows(n)
        longest = int((rows - ps).max()) + 1
        d = 1
        while d < longest:
            prev = xp.where(rows - d >= ps, acc[xp.maximum(rows - d, 0)], 0.0)
            acc = acc + prev
            d <<= 1
        return acc

    def frame_sum_float(self, x: Any, valid: Any, ps: Any, fs: Any, fe: Any) -> Any:
        """Float frame sums: narrow frames row by row, wide ones by partition-local prefix sums."""
        xp = self.xp
        n = x.shape[0]
        v = xp.where(valid, x, 0.0).astype(xp.float64)
        if n == 0:
            return v
        width = fe - fs
        narrow = width <= _DIRECT_SUM_WIDTH
        direct = xp.zeros(n, dtype=xp.float64)
        for k in range(min(_DIRECT_SUM_WIDTH, int(width.max()))):
            take = narrow & (width > k)
            direct = direct + xp.where(take, v[xp.minimum(fs + k, n - 1)], 0.0)
        if bool(narrow.all()):
            return direct
        finite = xp.isfinite(v)
        scan = self._partition_scan(xp.where(finite, v, 0.0), ps)
        before = xp.where(fs > ps, scan[xp.maximum(fs - 1, 0)], 0.0)
        wide = scan[xp.maximum(fe - 1, 0)] - before
        if not bool(finite.all()):  # NaN/inf in a frame decide its sum (a prefix past an inf: inf - inf)
            zero = xp.zeros(1, dtype=xp.int64)

            def count(mask):
                c = xp.concatenate([zero, xp.cumsum(mask.astype(xp.int64))])
                return c[fe] - c[fs]

            nan, pos, neg = count(xp.isnan(v)), count(v == xp.inf), count(v == -xp.inf)
            wide = xp.where((nan > 0) | ((pos > 0) & (neg > 0)), xp.nan,
                            xp.where(pos > 0, xp.inf, xp.where(neg > 0, -xp.inf, wide)))
        return xp.where(narrow, direct, xp.where(fe > fs, wide, 0.0))

    def frame_extreme(self, key: Any, valid: Any, ps: Any, fs: Any, fe: Any, is_max: bool) -> Any:
        """Index of the frame's min (max) valid key per row, -1 for none; on ties the first row. A
        sparse table (level j: the best row of [i, i + 2^j)) answers a frame of width w with the
        two level-floor(log2 w) entries that cover it."""
        xp = self.xp
        n = key.shape[0]
        out = xp.full(n, -1, dtype=xp.int64)
        if n == 0:
            return out
        width = fe - fs
        level = xp.zeros(n, dtype=xp.int64)
        top = int(width.max())
        for j in range(1, max(top, 1).bit_length()):
            level = level + (width >= (1 << j))
        best = self._rows(n)

        def better(i: Any, k: Any) -> Any:
            ki, kk = key[i], key[k]
            vi, vk = valid[i], valid[k]
            wins = (ki > kk) if is_max else (ki < kk)
            tie = (ki == kk) & (i < k)
            keep = vi & (~vk | wins | tie)
            return xp.where(keep, i, k)

        for j in range(max(top, 1).bit_length()):
            rows = xp.flatnonzero((level == j) & (width > 0))
            if rows.shape[0]:
                left = best[fs[rows]]
                right = best[fe[rows] - (1 << j)]
                pick = better(left, right)
                out[rows] = xp.where(valid[pick], pick, -1)
            step = 1 << j
            best = better(best, best[xp.minimum(self._rows(n) + step, n - 1)])
        return out
