"""Generated pipeline kernels *run* without a GPU: the kernel text plus pipeline.cuh is compiled as a
host C++ program with g++ (CUDA built-ins shimmed sequentially: one thread at a time, atomics as
plain read-modify-writes), join builds are laid out exactly like hashing.GpuJoinTable (normalised key
bits, splitmix64 row hash, linear probing, CSR of build rows per slot), and the groups the kernel
leaves in its hash table are compared with a NumPy/Python reference: non-unique and skewed builds
(all keys equal), empty build, empty probe, NULL keys, semi/anti/mark/left probes, NULL group keys."""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
import struct
import subprocess
from collections import defaultdict

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_kernel import PAGE_PTRS, PL_BLOCK, PL_TILE
from hetdb.backend.gpu.codegen.pipeline_spec import (
    AggregateSink,
    FilterStage,
    Input,
    PipelineSpec,
    ProbeStage,
)
from hetdb.backend.gpu.compile import load_source
from hetdb.plan.expr import Call, ColumnRef, Literal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

M64 = (1 << 64) - 1
SEED = 0x9E3779B97F4A7C15

SHIM = r"""
#include <cstdio>
#include <cstring>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
struct Dim3 { unsigned x; };
static Dim3 threadIdx, blockIdx, gridDim, blockDim;
inline void __syncthreads() {}
inline void __syncwarp() {}
inline void __threadfence() {}
template <class T> T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
inline int atomicCAS(int* p, int c, int v) { int o = *p; if (o == c) *p = v; return o; }
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  unsigned long long o = *p; if (o == c) *p = v; return o; }
inline int atomicExch(int* p, int v) { int o = *p; *p = v; return o; }
inline long long atomicMin(long long* p, long long v) { long long o = *p; if (v < o) *p = v; return o; }
inline long long atomicMax(long long* p, long long v) { long long o = *p; if (v > o) *p = v; return o; }
inline unsigned __activemask() { return 1u << (threadIdx.x & 31); }
inline int __ffs(unsigned x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline unsigned atomicOr(unsigned* p, unsigned v) { unsigned o = *p; *p = o | v; return o; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
template <class T> T __shfl_sync(unsigned, T v, int) { return v; }
inline unsigned __match_any_sync(unsigned, unsigned long long) { return 1u << (threadIdx.x & 31); }
template <class T> T __shfl_up_sync(unsigned, T v, int) { return v; }
inline unsigned __ballot_sync(unsigned, bool p) { return p ? 1u << (threadIdx.x & 31) : 0u; }
inline int __syncthreads_count(bool p) { return p ? 1 : 0; }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline long long __double_as_longlong(double v) { long long d; std::memcpy(&d, &v, 8); return d; }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
"""


def splitmix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def row_hash(bits: list[int]) -> int:
    h = SEED
    for b in bits:
        h = splitmix(h ^ (b & M64))
    return h


def join_table(keys: list[tuple]) -> dict:
    """hashing.join_build over the rows whose keys have no NULL (valid_idx maps table rows back)."""
    valid_idx = [i for i, k in enumerate(keys) if None not in k]
    rows = [keys[i] for i in valid_idx]
    n = len(rows)
    cap = 1 << max(4, (2 * max(n, 1) - 1).bit_length())
    slots = [-1] * cap
    hashes = [row_hash(list(k)) for k in rows]
    row_slot = []
    for i, k in enumerate(rows):
        s = hashes[i] & (cap - 1)
        while slots[s] >= 0 and rows[slots[s]] != k:
            s = (s + 1) & (cap - 1)
        if slots[s] < 0:
            slots[s] = i
        row_slot.append(s)
    count = [0] * cap
    for s in row_slot:
        count[s] += 1
    start = list(np.cumsum(count) - np.array(count)) if cap else []
    slot_rows = sorted(range(n), key=lambda r: (row_slot[r], r))
    nk = len(keys[0]) if keys else 1
    flat = [rows[r][c] for c in range(nk) for r in range(n)]
    return {"n": n, "cap": cap, "slots": slots, "keys": flat, "hashes": hashes, "start": start, "count": count,
            "rows": slot_rows, "vidx": valid_idx, "nonempty": bool(keys), "has_null": len(valid_idx) < len(keys)}


def _double(v) -> str:
    """A C++ double literal; ("bits", b) is the double whose bit pattern is ``b`` (a NaN's payload)."""
    if isinstance(v, tuple):
        return f"__longlong_as_double({v[1]}LL)"
    v = float(v)
    if v != v:
        return "__builtin_nan(\"\")"
    return repr(v) if abs(v) != float("inf") else ("__builtin_inf()" if v > 0 else "-__builtin_inf()")


def _arr(name: str, ctype: str, values) -> str:
    values = list(values) or [0]
    if ctype == "double":
        body = ", ".join(_double(v) for v in values)
    elif ctype == "unsigned long long":
        body = ", ".join(f"{int(v)}ULL" for v in values)
    else:
        body = ", ".join(f"{int(v)}LL" if ctype == "long long" else str(int(v)) for v in values)
    return f"static {ctype} {name}[] = {{{body}}};"


def run_kernel(spec: PipelineSpec, columns: dict[str, list], builds: list[tuple[dict, list[list]]], tmp_path,
               slots: int = 4096, encoded: dict[str, np.ndarray] | None = None,
               grow_to: int = 0, pages: tuple[int, ...] = (),
               luts: list | None = None, row0: int = 0) -> list[tuple[tuple, list[int]]]:
    """Run ``spec`` over ``columns`` (input cid -> values, None = NULL) with ``builds`` ((table, payload
    value lists) per probe); returns (group key values, accumulator i64 values) per occupied slot.
    ``encoded``: cid -> the encoded data section the kernel reads instead (Input.codec not plain);
    with ``pages``: cid -> per page its encoded data section, or None for a value array (Input.codec
    "paged": the page table flags which).
    ``grow_to``: afterwards move the groups into a table of that many slots (pipeline.cuh
    pipe_regroup, as a growing GroupAccumulator does) and read them from there. ``pages``: the rows
    cut into pages of these sizes, read by the paged kernel through a page table (one launch).
    ``luts``: the int64 values of each dictionary lookup (all valid), e.g. a string join key's ids, or
    for a plain-string join key the build's table of strings (dict: off, chr, hash, slots)."""
    k = generate_pipeline(spec, paged=bool(pages))
    assert len(k.lookups) == len(luts or [])
    n = len(next(iter(columns.values())))
    assert not pages or sum(pages) == n
    decl, args = [], []
    ctypes = {"int32": "int", "int64": "long long", "float64": "double", "date": "int", "bool": "bool",
              "string": "int"}
    for j, inp in enumerate(spec.inputs):
        vals = columns[inp.cid]
        if inp.dtype.kind == "string" and not inp.dictionary:  # plain strings: offsets and UTF-8 bytes
            data = [b"" if v is None else v.encode() for v in vals]
            decl.append(_arr(f"o{j}", "long long", np.cumsum([0] + [len(b) for b in data])))
            decl.append(_arr(f"c{j}", "unsigned char", b"".join(data)))
            args += [f"o{j}", f"c{j}"]
        elif encoded and inp.cid in encoded and pages:
            for p, section in enumerate(encoded[inp.cid]):
                if section is not None:
                    body = ", ".join(str(int(b)) for b in section)
                    decl.append(f"alignas(8) static const unsigned char c{j}_e{p}[] = {{{body}}};")
            decl.append(_arr(f"c{j}", ctypes[inp.dtype.kind], [0 if v is None else v for v in vals]))
        elif encoded and inp.cid in encoded:
            body = ", ".join(str(int(b)) for b in encoded[inp.cid])
            decl.append(f"alignas(8) static const unsigned char c{j}[] = {{{body}}};")
        else:
            decl.append(_arr(f"c{j}", ctypes[inp.dtype.kind], [0 if v is None else v for v in vals]))
        if not (inp.dtype.kind == "string" and not inp.dictionary):
            args.append(f"c{j}")
        if inp.nullable:
            decl.append(_arr(f"v{j}", "bool", [v is not None for v in vals]))
            args.append(f"v{j}")
    args += [str(n), str(-(-n // PL_TILE))]
    num_tiles = -(-n // PL_TILE)
    paging: list[str] = []
    if pages:  # the page table replaces the inputs: pointers into the arrays at each page's first row
        num = len(pages)
        width = PAGE_PTRS * len(spec.inputs)
        tiles = [sum(-(-r // PL_TILE) for r in pages[:p]) for p in range(num + 1)]
        firsts = [sum(pages[:p]) for p in range(num)]
        num_tiles = tiles[-1]
        decl.append(f"static long long pl_pages[{3 * num + 1 + num * width}];")
        for p in range(num):
            paging += [f"  pl_pages[{p}] = {tiles[p]}LL; pl_pages[{num + 1 + p}] = {firsts[p]}LL; "
                       f"pl_pages[{2 * num + 1 + p}] = {pages[p]}LL;"]
            for j, inp in enumerate(spec.inputs):
                at = 3 * num + 1 + p * width + PAGE_PTRS * j
                section = (encoded or {}).get(inp.cid, [None] * num)[p]
                if inp.dtype.kind == "string" and not inp.dictionary:  # (offsets index the whole bytes)
                    paging.append(f"  pl_pages[{at}] = (long long)(o{j} + {firsts[p]}); "
                                  f"pl_pages[{at + 2}] = (long long)c{j};")
                elif section is None:
                    paging.append(f"  pl_pages[{at}] = (long long)(c{j} + {firsts[p]});")
                else:
                    # (the page table's flag of an encoded page is its codec id: the section's first byte)
                    paging.append(f"  pl_pages[{at}] = (long long)c{j}_e{p}; pl_pages[{at + 2}] = {int(section[0])};")
                paging.append(f"  pl_pages[{at + 1}] = " + (f"(long long)(v{j} + {firsts[p]});" if inp.nullable else "0;"))
        paging.append(f"  pl_pages[{num}] = {num_tiles}LL;")
        args = ["pl_pages", str(num), str(num_tiles)]
    for i, values in enumerate(luts or []):
        if isinstance(values, dict):  # a build's table of strings (a plain-string join key's Lookup)
            decl += [_arr(f"lto{i}", "long long", values["off"]), _arr(f"ltc{i}", "unsigned char", values["chr"]),
                     _arr(f"lth{i}", "unsigned long long", values["hash"]),
                     _arr(f"lts{i}", "long long", values["slots"])]
            args += [f"lto{i}", f"ltc{i}", f"lth{i}", f"lts{i}", f"{len(values['slots']) - 1}LL"]
            continue
        decl += [_arr(f"lut{i}", "long long", values), _arr(f"lutv{i}", "bool", [1] * len(values))]
        args += [f"lut{i}", f"lutv{i}"]
    probes = [s for s in spec.stages if isinstance(s, ProbeStage)]
    for p, (stage, (t, payload)) in enumerate(zip(probes, builds)):
        decl += [_arr(f"s{p}", "long long", t["slots"]), _arr(f"k{p}", "long long", t["keys"]),
                 _arr(f"h{p}", "unsigned long long", t["hashes"]), _arr(f"st{p}", "long long", t["start"]),
                 _arr(f"ct{p}", "long long", t["count"]), _arr(f"r{p}", "long long", t["rows"]),
                 _arr(f"vi{p}", "long long", t["vidx"])]
        args += [f"s{p}", f"{t['cap'] - 1}ULL", f"k{p}", str(t["n"]), f"h{p}", f"st{p}", f"ct{p}", f"r{p}", f"vi{p}",
                 str(int(t["nonempty"])), str(int(t["has_null"]))]
        for j, (inp, vals) in enumerate(zip(stage.payload, payload)):
            decl.append(_arr(f"pay{p}_{j}", ctypes[inp.dtype.kind], [0 if v is None else v for v in vals]))
            args.append(f"pay{p}_{j}")
            if inp.nullable:
                decl.append(_arr(f"payv{p}_{j}", "bool", [v is not None for v in vals]))
                args.append(f"payv{p}_{j}")
    nk = len(k.group_keys)
    decl += [f"static int g_state[{slots}];", f"static long long g_keys[{(nk + 1) * slots}];",
             "static unsigned long long g_used[1], g_overflow[1], errors[1], arith_err[4];"]
    args += ["g_state", "g_keys", f"{slots - 1}ULL", "g_used", f"{slots * 7 // 10}ULL", "g_overflow"]
    for a, acc in enumerate(k.accumulators):
        init = {"fused::AccMinI64": "0x7FFFFFFFFFFFFFFFLL", "fused::AccMaxI64": "(-0x7FFFFFFFFFFFFFFFLL - 1)"}
        decl.append(f"static long long acc{a}[{slots}];")
        decl.append(f"static const long long acc{a}_init = {init.get(acc.acc, '0LL')};")
        args.append(f"acc{a}")
    args += ["errors", "arith_err"]
    if any(a.part.startswith("zero_sign") for a in k.accumulators):
        args.append(f"{row0}LL")  # pl_row0
    args += [lit.text for lit in k.literals]  # (the literals' values: the kernel's last parameters)
    main = ["int main() {", *paging]
    main += [f"  for (int s = 0; s < {slots}; ++s) acc{a}[s] = acc{a}_init;" for a in range(len(k.accumulators))]
    main += [f"  gridDim.x = {max(1, num_tiles)};",
             "  for (unsigned b = 0; b < gridDim.x; ++b) {", "    blockIdx.x = b;",
             f"    for (unsigned t = 0; t < {PL_BLOCK}; ++t) {{", "      threadIdx.x = t;",
             f"      {k.name}({', '.join(args)});", "    }", "  }",
             '  if (g_overflow[0] || errors[0]) { std::printf("FAIL\\n"); return 1; }',
             '  if (arith_err[0]) { std::printf("OVERFLOW %llu %lld %lld\\n", arith_err[1], (long long)arith_err[2], '
             '(long long)arith_err[3]); return 3; }',
             ]
    table, accs = ("g_state", "g_keys"), [f"acc{a}" for a in range(len(k.accumulators))]
    if grow_to:
        na = len(k.accumulators)
        decl += [f"static int n_state[{grow_to}];", f"static long long n_keys[{(nk + 1) * grow_to}];",
                 "static unsigned long long n_used[1], n_overflow[1];"]
        decl += [f"static long long n_acc{a}[{grow_to}];" for a in range(na)]
        main += [f"  for (int s = 0; s < {grow_to}; ++s) n_acc{a}[s] = acc{a}_init;" for a in range(na)]
        main += ["  unsigned long long old_p[] = {" + ", ".join([f"(unsigned long long)acc{a}" for a in range(na)] + ["0"])
                 + "};",
                 "  unsigned long long new_p[] = {" + ", ".join([f"(unsigned long long)n_acc{a}" for a in range(na)]
                                                              + ["0"]) + "};",
                 "  gridDim.x = 1; blockDim.x = 1; blockIdx.x = 0; threadIdx.x = 0;",
                 f"  pipe_regroup(g_state, g_keys, {slots}, {nk}, n_state, n_keys, {grow_to - 1}ULL, n_used, "
                 f"{grow_to}ULL, n_overflow, old_p, new_p, {na});",
                 '  if (n_overflow[0] || n_used[0] != g_used[0]) { std::printf("FAIL regroup\\n"); return 1; }']
        table, accs, slots = ("n_state", "n_keys"), [f"n_acc{a}" for a in range(na)], grow_to
    main += [f"  for (int s = 0; s < {slots}; ++s) if ({table[0]}[s] == 2) {{",
             '    std::printf("G");']
    main += [f'    std::printf(" %lld", {table[1]}[{c} * {slots} + s]);' for c in range(nk + 1)]
    main += [f'    std::printf(" %lld", {acc}[s]);' for acc in accs]
    main += ['    std::printf("\\n");', "  }", "  return 0;", "}"]
    src = SHIM + load_source("pipeline.cuh") + "\n" + "\n".join(decl) + "\n" + k.body + "\n" + "\n".join(main)
    path = tmp_path / f"{k.name}.cpp"
    path.write_text(src)
    exe = tmp_path / k.name
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(path)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:]
    groups = []
    parts = [(acc.agg, acc.part) for acc in k.accumulators]
    for line in out.stdout.splitlines():
        vals = [int(v) for v in line.split()[1:]]
        nulls = vals[nk]
        key = tuple(None if nulls >> c & 1 else vals[c] for c in range(nk))
        accs = vals[nk + 1:]
        for a, (agg, part) in enumerate(parts):
            if part == "fsum":  # the DOUBLE twin of an int64 sum (wide_sum): equal while nothing wraps
                approx = struct.unpack("<d", struct.pack("<q", accs[a]))[0]
                exact = accs[parts.index((agg, "sum"))]
                assert abs(approx - exact) <= 1e-9 * max(1.0, abs(exact)), (key, approx, exact)
        groups.append((key, [v for v, (_, part) in zip(accs, parts) if part != "fsum"]))
    return groups


def col(c: str, t=T.INT64) -> ColumnRef:
    return ColumnRef(t, c, True)


def by_key(groups) -> dict:
    out = {}
    for key, accs in groups:
        assert key not in out
        out[key] = accs
    return out


SUM_COUNT = (("count_star", None), ("sum", col("v")))


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("case", ["random", "skewed", "empty_build", "empty_probe"])
def test_inner_probe_non_unique_with_nulls(case, share, tmp_path):
    rng = random.Random(hash(case) & 0xFFFF)
    n = 0 if case == "empty_probe" else 1500
    fk = [None if rng.random() < 0.1 else rng.randint(0, 60) for _ in range(n)]
    v = [None if rng.random() < 0.1 else rng.randint(-1000, 1000) for _ in range(n)]
    if case == "empty_build":
        bk: list = []
    elif case == "skewed":
        bk = [7] * 40 + [None] * 3 + [8]
    else:
        bk = [None if rng.random() < 0.1 else rng.randint(0, 80) for _ in range(120)]
    g = [rng.randint(0, 4) for _ in bk]  # build payload used as group key
    spec = PipelineSpec((Input("fk", T.INT64), Input("v", T.INT64)),
                        (ProbeStage("inner", (col("fk"),), (T.INT64,), (Input("g", T.INT64, False),)),),
                        AggregateSink((col("g"),), SUM_COUNT, share=share))
    if case == "skewed":
        fk = [7 if i % 3 == 0 else x for i, x in enumerate(fk)]
    got = by_key(run_kernel(spec, {"fk": fk, "v": v}, [(join_table([(x,) for x in bk]), [g])], tmp_path))
    if n:  # the same rows as three pages of one paged launch (page sizes not multiples of the tile)
        paged = run_kernel(spec, {"fk": fk, "v": v}, [(join_table([(x,) for x in bk]), [g])], tmp_path,
                           pages=(700, 13, n - 713))
        assert by_key(paged) == got
    ref: dict = defaultdict(lambda: [0, 0, 0])
    for a, val in zip(fk, v):
        for b, gg in zip(bk, g):
            if a is not None and a == b:
                r = ref[(gg,)]
                r[0] += 1
                if val is not None:
                    r[1] += val
                    r[2] += 1
    assert {k: [c, s, nn] for k, (c, s, nn) in got.items()} == dict(ref)
    assert (len(ref) > 0) == (case not in ("empty_build", "empty_probe"))


@pytest.mark.parametrize("kind", ["semi", "anti", "mark", "left"])
def test_filtering_and_outer_probes(kind, tmp_path):
    rng = random.Random(5)
    n = 1300
    fk = [None if rng.random() < 0.15 else rng.randint(0, 30) for _ in range(n)]
    gk = [None if rng.random() < 0.2 else rng.randint(0, 3) for _ in range(n)]
    v = [rng.randint(0, 100) for _ in range(n)]
    bk = [None if i % 9 == 0 else rng.randint(0, 20) for i in range(25)]
    w = [rng.randint(1, 9) for _ in bk]
    stages: tuple = (ProbeStage(kind, (col("fk"),), (T.INT64,),
                                (Input("w", T.INT64, False),) if kind == "left" else (),
                                mark="mk" if kind == "mark" else None),)
    keys: tuple = (col("gk"),)
    aggs = SUM_COUNT
    if kind == "mark":  # NOT IN: keep rows whose mark is FALSE (not TRUE, not NULL)
        stages += (FilterStage(Call(T.BOOL, "not", (ColumnRef(T.BOOL, "mk", True),))),)
    if kind == "left":
        aggs = (("count_star", None), ("sum", col("w")))
    spec = PipelineSpec((Input("fk", T.INT64), Input("gk", T.INT64), Input("v", T.INT64, False)), stages,
                        AggregateSink(keys, aggs))
    got = by_key(run_kernel(spec, {"fk": fk, "gk": gk, "v": v}, [(join_table([(x,) for x in bk]), [w])], tmp_path))
    ref: dict = defaultdict(lambda: [0, 0, 0])
    present = {b for b in bk if b is not None}
    has_null = any(b is None for b in bk)
    for a, g, val in zip(fk, gk, v):
        hit = a is not None and a in present
        if kind == "semi" and not hit or kind == "anti" and hit:
            continue
        if kind == "mark" and (hit or a is None or has_null):
            continue  # NOT (TRUE or NULL) does not pass
        if kind == "left":
            matches = [ww for b, ww in zip(bk, w) if hit and b == a] or [None]
            for ww in matches:
                r = ref[(g,)]
                r[0] += 1
                if ww is not None:
                    r[1] += ww
                    r[2] += 1
            continue
        r = ref[(g,)]
        r[0] += 1
        r[1] += val
        r[2] += 1
    assert {k: list(a) for k, a in got.items()} == dict(ref)
    assert len(ref) > 0 or kind == "mark"


def test_multi_key_probe_and_filter(tmp_path):
    rng = random.Random(9)
    n = 900
    a = [rng.randint(0, 5) for _ in range(n)]
    b = [None if rng.random() < 0.1 else rng.randint(0, 5) for _ in range(n)]
    build = [(rng.randint(0, 5), rng.randint(0, 5)) for _ in range(20)]
    spec = PipelineSpec((Input("a", T.INT64, False), Input("b", T.INT64)),
                        (FilterStage(Call(T.BOOL, "gt", (col("a"), Literal(T.INT64, 0)))),
                         ProbeStage("inner", (col("a"), col("b")), (T.INT64, T.INT64))),
                        AggregateSink((col("a"), col("b")), (("count_star", None),)))
    got = by_key(run_kernel(spec, {"a": a, "b": b}, [(join_table(build), [])], tmp_path))
    ref: dict = defaultdict(lambda: [0])
    for x, y in zip(a, b):
        if x > 0 and y is not None:
            for bb in build:
                if bb == (x, y):
                    ref[(x, y)][0] += 1
    assert got == dict(ref) and len(ref) > 3


def test_many_groups_and_overflow_detection(tmp_path):
    rng = random.Random(3)
    n = 3000
    k1 = [rng.randint(0, 2000) for _ in range(n)]
    k2 = [None if i % 11 == 0 else i % 3 for i in range(n)]
    v = [rng.randint(-50, 50) for _ in range(n)]
    spec = PipelineSpec((Input("k1", T.INT64, False), Input("k2", T.INT64), Input("v", T.INT64, False)), (),
                        AggregateSink((col("k1"), col("k2")), (("min", col("v")), ("max", col("v")))))
    got = by_key(run_kernel(spec, {"k1": k1, "k2": k2, "v": v}, [], tmp_path, slots=8192))
    ref: dict = {}
    for a, b, x in zip(k1, k2, v):
        lo, hi = ref.get((a, b), (x, x))
        ref[(a, b)] = (min(lo, x), max(hi, x))
    assert {k: (acc[0], acc[2]) for k, acc in got.items()} == ref and len(ref) > 2000
    # the same groups after the table grew into one of twice the slots (pipe_regroup)
    grown = by_key(run_kernel(spec, {"k1": k1, "k2": k2, "v": v}, [], tmp_path, slots=8192, grow_to=16384))
    assert grown == got
    with pytest.raises(AssertionError, match="FAIL"):  # a table too small reports overflow (the host reruns)
        run_kernel(spec, {"k1": k1, "k2": k2, "v": v}, [], tmp_path, slots=1024)


def test_paged_take_gathers_global_rows_from_pages(tmp_path):
    """pipeline.cuh pipe_paged_take: rows numbered over pages of different sizes (global row ->
    page by binary search over the first rows), values of 8, 4 and 1 bytes, a validity page
    without NULLs (null pointer) reading as valid, and pages kept compressed (for, dict, const:
    their encoded data sections, flagged per page) next to value arrays."""
    from hetdb.codec.encodings import encode_as

    sizes = (5, 1, 9, 4)
    starts = [sum(sizes[:p]) for p in range(len(sizes))]
    n = sum(sizes)
    rng = random.Random(2)
    rows = [rng.randrange(n) for _ in range(40)] + [0, n - 1, starts[1], starts[2]]
    v64 = [rng.randint(-(1 << 62), 1 << 62) for _ in range(n)]
    v32 = [rng.randint(-(1 << 30), 1 << 30) for _ in range(n)]
    v32[:sizes[0]] = [-77] * sizes[0]  # page 0 of v32: one value (a const page)
    valid = [rng.random() < 0.7 for _ in range(n)]
    no_nulls_page = 2  # its validity pointer is null
    codecs64 = {1: "for", 2: "dict"}  # page -> codec of v64's pages kept compressed
    codecs32 = {0: "const", 2: "for"}
    decl = [_arr("v64", "long long", v64), _arr("v32", "int", v32), _arr("val", "bool", valid),
            _arr("starts", "long long", starts), _arr("rows", "long long", rows),
            f"static long long o64[{len(rows)}];", f"static int o32[{len(rows)}];", f"static bool oval[{len(rows)}];"]
    for name, values, dtype, codecs in (("v64", v64, np.int64, codecs64), ("v32", v32, np.int32, codecs32)):
        for p, codec in codecs.items():
            section = encode_as(np.asarray(values[starts[p]:starts[p] + sizes[p]], dtype=dtype), codec)
            decl.append(f"alignas(8) static const unsigned char {name}_e{p}[] = "
                        f"{{{', '.join(str(int(b)) for b in section)}}};")
    main = ["int main() {", f"  long long p64[{len(sizes)}], p32[{len(sizes)}], pv[{len(sizes)}];",
            f"  long long e64[{len(sizes)}] = {{{', '.join('1' if p in codecs64 else '0' for p in range(len(sizes)))}}};",
            f"  long long e32[{len(sizes)}] = {{{', '.join('1' if p in codecs32 else '0' for p in range(len(sizes)))}}};"]
    for p, first in enumerate(starts):
        p64 = f"(long long)v64_e{p}" if p in codecs64 else f"(long long)(v64 + {first})"
        p32 = f"(long long)v32_e{p}" if p in codecs32 else f"(long long)(v32 + {first})"
        main.append(f"  p64[{p}] = {p64}; p32[{p}] = {p32}; "
                    f"pv[{p}] = {'0' if p == no_nulls_page else f'(long long)(val + {first})'};")
    main += ["  gridDim.x = 1; blockDim.x = 1; blockIdx.x = 0; threadIdx.x = 0;",
             f"  pipe_paged_take(p64, e64, starts, {len(sizes)}, 8, rows, {len(rows)}, (unsigned char*)o64);",
             f"  pipe_paged_take(p32, e32, starts, {len(sizes)}, 4, rows, {len(rows)}, (unsigned char*)o32);",
             f"  pipe_paged_take(pv, nullptr, starts, {len(sizes)}, 1, rows, {len(rows)}, (unsigned char*)oval);",
             f'  for (int i = 0; i < {len(rows)}; ++i) std::printf("%lld %d %d\\n", o64[i], o32[i], (int)oval[i]);',
             "  return 0;", "}"]
    src = tmp_path / "take.cpp"
    src.write_text(SHIM + load_source("pipeline.cuh") + "\n" + "\n".join(decl) + "\n" + "\n".join(main))
    exe = tmp_path / "take"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(src)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split()
    got = [tuple(int(x) for x in out[i:i + 3]) for i in range(0, len(out), 3)]
    page_of = [max(p for p, f in enumerate(starts) if f <= r) for r in rows]
    want = [(v64[r], v32[r], 1 if p == no_nulls_page else int(valid[r])) for r, p in zip(rows, page_of)]
    assert got == want and len(got) == len(rows)
    assert {page_of[i] for i in range(len(rows))} == set(range(len(sizes)))  # every page was read


def test_paged_like_on_plain_string_pages(tmp_path):
    """A paged kernel reads a plain-string input's offsets and bytes from the page table (LIKE in the
    kernel, NULLs, empty strings, multi-byte code points), as the per-batch kernel over the same rows."""
    rng = random.Random(12)
    words = ["", "ab", "xaby", "é", "aéb", "straße", "abab", "zz"]
    n = 1400
    s = [None if rng.random() < 0.1 else rng.choice(words) + rng.choice(words) for _ in range(n)]
    g = [rng.randint(0, 5) for _ in range(n)]
    like = Call(T.BOOL, "like", (ColumnRef(T.STRING, "s", True), Literal(T.STRING, "%a_b%")))
    spec = PipelineSpec((Input("s", T.STRING), Input("g", T.INT64, False)), (FilterStage(like),),
                        AggregateSink((col("g"),), (("count_star", None),)))
    got = by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path))
    assert by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path, pages=(600, 1, 799))) == got
    pattern = re.compile(r".*a.b.*", re.S)  # ('_': one code point)
    want: dict = defaultdict(lambda: [0])
    for x, gg in zip(s, g):
        if x is not None and pattern.fullmatch(x):
            want[(gg,)][0] += 1
    assert got == dict(want) and len(want) > 3


@pytest.mark.parametrize("form", ["in_list", "eq"])
def test_substring_prefix_of_plain_strings(form, tmp_path):
    """``substring(s, 1, k) IN (...)`` / ``= '..'`` of a plain-string input runs in the kernel as byte
    prefix tests (TPC-H q22's country codes): literals of k characters, fewer (all of s) and more
    (never), multi-byte code points, NULLs, empty strings; equal to Python's code-point substring."""
    rng = random.Random(22 + len(form))
    words = ["", "a", "ab", "abc", "é", "éa", "aé", "x", "xy", "13-55", "31"]
    n = 1300
    s = [None if rng.random() < 0.1 else rng.choice(words) + rng.choice(words) for _ in range(n)]
    g = [rng.randint(0, 4) for _ in range(n)]
    items = ["ab", "éa", "x", "abc", "13", "31"] if form == "in_list" else ["éa"]
    sub = Call(T.STRING, "substring", (ColumnRef(T.STRING, "s", True), Literal(T.INT64, 1), Literal(T.INT64, 2)))
    lits = tuple(Literal(T.STRING, v) for v in items)
    pred = Call(T.BOOL, "in_list", (sub, *lits)) if form == "in_list" else Call(T.BOOL, "eq", (lits[0], sub))
    spec = PipelineSpec((Input("s", T.STRING), Input("g", T.INT64, False)), (FilterStage(pred),),
                        AggregateSink((col("g"),), (("count_star", None),)))
    got = by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path))
    assert by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path, pages=(500, 2, 798))) == got
    want: dict = defaultdict(lambda: [0])
    for x, gg in zip(s, g):
        if x is not None and x[:2] in items:
            want[(gg,)][0] += 1
    assert got == dict(want) and len(want) > 3


def test_string_join_key_probes_by_the_builds_ids(tmp_path):
    """A string join key: the probe's dictionary codes look up the build's string ids (the lookup the
    executor fills from the build's key encoder, -1 for a string the build lacks); NULL probe keys and
    strings the build lacks match nothing; non-unique build keys expand (paged as well)."""
    rng = random.Random(21)
    probe_dict = ["a", "b", "c", "d", "é"]
    build_strings = ["c", "a", "x", "c", None, "é"]
    ids: dict[str, int] = {}
    for v in build_strings:
        if v is not None:
            ids.setdefault(v, len(ids))
    lut = [ids.get(v, -1) for v in probe_dict]
    n = 900
    codes = [None if rng.random() < 0.1 else rng.randrange(len(probe_dict)) for _ in range(n)]
    g = [rng.randint(0, 3) for _ in range(n)]
    w = [rng.randint(1, 9) for _ in build_strings]
    spec = PipelineSpec((Input("s", T.STRING, True, True), Input("g", T.INT64, False)),
                        (ProbeStage("inner", (ColumnRef(T.STRING, "s", True),), (T.STRING,),
                                    (Input("w", T.INT64, False),)),),
                        AggregateSink((col("g"),), (("count_star", None), ("sum", col("w")))))
    table = join_table([(None if v is None else ids[v],) for v in build_strings])
    got = by_key(run_kernel(spec, {"s": codes, "g": g}, [(table, [w])], tmp_path, luts=[lut]))
    assert by_key(run_kernel(spec, {"s": codes, "g": g}, [(table, [w])], tmp_path, luts=[lut],
                             pages=(500, 400))) == got
    want: dict = defaultdict(lambda: [0, 0, 0])
    for c, gg in zip(codes, g):
        for b, ww in zip(build_strings, w):
            if c is not None and b is not None and probe_dict[c] == b:
                r = want[(gg,)]
                r[0] += 1
                r[1] += ww
                r[2] += 1
    assert got == dict(want) and len(want) == 4


@pytest.mark.parametrize("n", [0, 3, 2100])
def test_aggregate_without_group_by_folds_in_registers(n, tmp_path):
    """No GROUP BY: each thread folds its rows' states in registers and the group is updated after
    the tile loop (pipeline_gen_assembly._keyless_flush; here one thread at a time, each updating the group);
    sums, counts, min and max (integers and doubles) over a filter and a non-unique probe, as one
    batch and as pages; no rows at all leave no group."""
    rng = random.Random(n)
    fk = [None if rng.random() < 0.1 else rng.randint(0, 30) for _ in range(n)]
    v = [None if rng.random() < 0.1 else rng.randint(-10**6, 10**6) for _ in range(n)]
    x = [rng.uniform(-50, 50) for _ in range(n)]
    bk = [rng.randint(0, 40) for _ in range(50)]
    spec = PipelineSpec((Input("fk", T.INT64), Input("v", T.INT64), Input("x", T.FLOAT64, False)),
                        (FilterStage(Call(T.BOOL, "gt", (col("x", T.FLOAT64), Literal(T.FLOAT64, -20.0)))),
                         ProbeStage("inner", (col("fk"),), (T.INT64,), ())),
                        AggregateSink((), (("count_star", None), ("sum", col("v")), ("min", col("v")),
                                           ("max", col("x", T.FLOAT64)))))
    build = [(join_table([(b,) for b in bk]), [])]
    got = run_kernel(spec, {"fk": fk, "v": v, "x": x}, build, tmp_path)
    per_row = dataclasses.replace(spec, sink=dataclasses.replace(spec.sink, fold=False))  # (group_fold off)
    assert "kl0" not in generate_pipeline(per_row).body and "kl0" in generate_pipeline(spec).body
    assert run_kernel(per_row, {"fk": fk, "v": v, "x": x}, build, tmp_path) == got
    if n > 1000:
        assert run_kernel(spec, {"fk": fk, "v": v, "x": x}, build, tmp_path, pages=(600, 7, n - 607)) == got
    rows = [(a, val, xx) for a, val, xx in zip(fk, v, x) for b in bk if a is not None and a == b and xx > -20.0]
    if not rows:
        assert got == []
        return
    assert len(got) == 1 and got[0][0] == ()
    count, vsum, vcnt, vmin, vmin_cnt, xmax, xmax_cnt = got[0][1]
    vals = [val for _, val, _ in rows if val is not None]
    assert (count, vsum, vcnt, vmin, vmin_cnt) == (len(rows), sum(vals), len(vals), min(vals), len(vals))
    best = max(xx for _, _, xx in rows)
    assert xmax_cnt == len(rows)
    assert xmax == (lambda b: b if b >= 0 else b ^ 0x7FFFFFFFFFFFFFFF)(struct.unpack("<q", struct.pack("<d", best))[0])
