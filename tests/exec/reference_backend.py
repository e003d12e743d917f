"""A slow, obviously-correct pure NumPy implementation of the Backend protocol, used by the executor
tests as a second backend next to hetdb's real CpuBackend (results must be identical on both)."""

from __future__ import annotations

import re

import numpy as np

from hetdb.backend.base import HASH_SEED

M64 = (1 << 64) - 1


def _bits(k: np.ndarray) -> np.ndarray:
    if k.dtype.kind == "f":
        k = k.astype(np.float64).copy()
        k[k == 0] = 0.0
        bits = k.view(np.int64).copy()
        bits[np.isnan(k)] = 0x7FF8000000000000
        return bits
    return k.astype(np.int64)


def _rows(keys):
    cols = [_bits(np.asarray(k)) for k in keys]
    return list(zip(*[c.tolist() for c in cols])) if cols else []


def _strings(offsets, chars):
    b = bytes(np.asarray(chars, dtype=np.uint8))
    return [b[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def _pack(values: list[bytes]):
    offsets = np.zeros(len(values) + 1, np.int64)
    offsets[1:] = np.cumsum([len(v) for v in values]) if values else []
    return offsets, np.frombuffer(b"".join(values), dtype=np.uint8).copy()


class ReferenceBackend:
    name = "cpu"
    xp = np

    def asarray(self, a):
        return np.asarray(a)

    def to_host(self, a):
        return np.asarray(a)

    def nonzero(self, mask):
        return np.flatnonzero(mask).astype(np.int64)

    def gather(self, values, indices):
        return values[np.where(indices < 0, 0, indices)] if len(values) else values[:0].repeat(0)

    def hash_keys(self, keys):
        out = np.empty(len(keys[0]), np.uint64)
        cols = [_bits(np.asarray(k)) for k in keys]
        for i in range(len(out)):
            h = HASH_SEED
            for c in cols:
                z = (h ^ (int(c[i]) & M64)) & M64
                z = (z + 0x9E3779B97F4A7C15) & M64
                z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
                z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
                h = z ^ (z >> 31)
            out[i] = h
        return out

    def join_build(self, keys):
        table: dict = {}
        for i, r in enumerate(_rows(keys)):
            table.setdefault(r, []).append(i)
        return {"map": table, "num_rows": len(keys[0])}

    def join_probe(self, table, keys, kind):
        m = table["map"]
        rows = _rows(keys)
        if kind in ("inner", "left"):
            p, b = [], []
            for i, r in enumerate(rows):
                hits = m.get(r)
                if hits:
                    p += [i] * len(hits)
                    b += hits
                elif kind == "left":
                    p.append(i)
                    b.append(-1)
            return np.array(p, np.int64), np.array(b, np.int64)
        hit = np.array([r in m for r in rows], dtype=bool)
        if kind == "mark":
            return hit
        if kind == "semi":
            return np.flatnonzero(hit).astype(np.int64)
        if kind == "anti":
            return np.flatnonzero(~hit).astype(np.int64)
        matched = np.zeros(table["num_rows"], dtype=bool)
        for r in set(rows):
            for j in m.get(r, []):
                matched[j] = True
        return matched

    def group_ids(self, keys):
        n = len(keys[0]) if keys else 0
        if not keys:
            return np.zeros(n, np.int64), (1 if n else 0), np.zeros(1 if n else 0, np.int64)
        seen: dict = {}
        gid = np.empty(n, np.int64)
        first = []
        for i, r in enumerate(_rows(keys)):
            g = seen.get(r)
            if g is None:
                g = seen[r] = len(first)
                first.append(i)
            gid[i] = g
        return gid, len(first), np.array(first, np.int64)

    def aggregate(self, op, values, group_ids, num_groups, valid=None):
        n = len(group_ids)
        ok = np.ones(n, bool) if valid is None else np.asarray(valid, bool)
        has = np.zeros(num_groups, bool)
        np.logical_or.at(has, group_ids[ok], True)
        if op == "count_star":
            return np.bincount(group_ids, minlength=num_groups).astype(np.int64), np.ones(num_groups, bool)
        if op == "count":
            return np.bincount(group_ids[ok], minlength=num_groups).astype(np.int64), np.ones(num_groups, bool)
        v = values[ok]
        g = group_ids[ok]
        if op == "sum":
            dt = np.float64 if values.dtype.kind == "f" else np.int64
            out = np.zeros(num_groups, dt)
            np.add.at(out, g, v.astype(dt))
            return out, has
        out = np.zeros(num_groups, values.dtype)
        if op == "any":
            for j in range(len(v) - 1, -1, -1):
                out[g[j]] = v[j]
            return out, has
        for gi in range(num_groups):
            sel = v[g == gi]
            if len(sel):
                if sel.dtype.kind == "f" and np.isnan(sel).any():
                    out[gi] = np.nan if op == "max" else (np.nanmin(sel) if (~np.isnan(sel)).any() else np.nan)
                else:
                    out[gi] = sel.min() if op == "min" else sel.max()
        return out, has

    def count_distinct(self, values, group_ids, num_groups, valid=None):
        ok = np.ones(len(group_ids), bool) if valid is None else np.asarray(valid, bool)
        sets = [set() for _ in range(num_groups)]
        for g, v in zip(group_ids[ok].tolist(), _bits(np.asarray(values))[ok].tolist()):
            sets[g].add(v)
        return np.array([len(s) for s in sets], np.int64)

    def sort_indices(self, keys, descending):
        idx = np.arange(len(keys[0]), dtype=np.int64) if keys else np.zeros(0, np.int64)
        for k, d in reversed(list(zip(keys, descending))):
            k = np.asarray(k)[idx]
            if k.dtype == bool:
                k = k.astype(np.int8)
            if d:
                # stable descending: sort the reversed ranks
                if k.dtype.kind == "f":
                    order = np.argsort(-np.where(np.isnan(k), np.inf, k), kind="stable")
                    nan = np.isnan(k[order])
                    order = np.concatenate([order[nan], order[~nan]])
                else:
                    _, inv = np.unique(k, return_inverse=True)
                    order = np.argsort(-inv, kind="stable")
            else:
                order = np.argsort(k, kind="stable")
            idx = idx[order]
        return idx

    def topk_indices(self, keys, descending, k):
        return self.sort_indices(keys, descending)[:k]

    def like(self, offsets, chars, pattern, case_insensitive=False):
        rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
        flags = re.S | (re.I if case_insensitive else 0)
        r = re.compile(rx, flags)
        return np.array([r.fullmatch(s.decode()) is not None for s in _strings(offsets, chars)], dtype=bool)

    def compare_string_scalar(self, offsets, chars, literal, op):
        lit = literal.encode()
        f = {"=": lambda a: a == lit, "<>": lambda a: a != lit, "<": lambda a: a < lit,
             "<=": lambda a: a <= lit, ">": lambda a: a > lit, ">=": lambda a: a >= lit}[op]
        return np.array([f(s) for s in _strings(offsets, chars)], dtype=bool)

    def factorize_strings(self, offsets, chars):
        ss = _strings(offsets, chars)
        uniq = sorted(set(ss))
        pos = {s: i for i, s in enumerate(uniq)}
        o, c = _pack(uniq)
        return np.array([pos[s] for s in ss], np.int32), o, c

    def substring(self, offsets, chars, start, length):
        out = []
        for s in _strings(offsets, chars):
            t = s.decode()
            n = length
            if start > 0:
                b = start - 1
            elif start == 0:
                b = 0
                n = None if n is None else max(0, n - 1)
            else:
                b = max(0, len(t) + start)
            e = len(t) if n is None else b + n
            out.append(t[b:e].encode())
        return _pack(out)

    def gather_strings(self, offsets, chars, indices):
        ss = _strings(offsets, chars)
        return _pack([ss[i] for i in indices])
