"""The host run of generated pipeline kernels (test_gpu_pipeline_host_run.py and the other
*_host_run tests): the kernel text plus pipeline.cuh compiled as a host C++ program with g++ (CUDA
built-ins shimmed sequentially: one thread at a time, atomics as plain read-modify-writes,
``SHIM``), join builds laid out exactly like hashing.GpuJoinTable (normalised key bits, splitmix64
row hash, linear probing, CSR of build rows per slot: ``join_table``), ``run_kernel`` (compile,
run, read back the groups the kernel leaves in its hash table), ``col`` and ``by_key``."""

from __future__ import annotations

import struct
import subprocess

import numpy as np

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_kernel import PAGE_PTRS, PL_BLOCK, PL_TILE
from hetdb.backend.gpu.codegen.pipeline_spec import (
    PipelineSpec,
    ProbeStage,
)
from hetdb.backend.gpu.compile import load_source
from hetdb.plan.expr import ColumnRef

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


def c_double(v) -> str:
    """A C++ double literal; ("bits", b) is the double whose bit pattern is ``b`` (a NaN's payload)."""
    if isinstance(v, tuple):
        return f"__longlong_as_double({v[1]}LL)"
    v = float(v)
    if v != v:
        return "__builtin_nan(\"\")"
    return repr(v) if abs(v) != float("inf") else ("__builtin_inf()" if v > 0 else "-__builtin_inf()")


def c_array(name: str, ctype: str, values) -> str:
    values = list(values) or [0]
    if ctype == "double":
        body = ", ".join(c_double(v) for v in values)
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
            decl.append(c_array(f"o{j}", "long long", np.cumsum([0] + [len(b) for b in data])))
            decl.append(c_array(f"c{j}", "unsigned char", b"".join(data)))
            args += [f"o{j}", f"c{j}"]
        elif encoded and inp.cid in encoded and pages:
            for p, section in enumerate(encoded[inp.cid]):
                if section is not None:
                    body = ", ".join(str(int(b)) for b in section)
                    decl.append(f"alignas(8) static const unsigned char c{j}_e{p}[] = {{{body}}};")
            decl.append(c_array(f"c{j}", ctypes[inp.dtype.kind], [0 if v is None else v for v in vals]))
        elif encoded and inp.cid in encoded:
            body = ", ".join(str(int(b)) for b in encoded[inp.cid])
            decl.append(f"alignas(8) static const unsigned char c{j}[] = {{{body}}};")
        else:
            decl.append(c_array(f"c{j}", ctypes[inp.dtype.kind], [0 if v is None else v for v in vals]))
        if not (inp.dtype.kind == "string" and not inp.dictionary):
            args.append(f"c{j}")
        if inp.nullable:
            decl.append(c_array(f"v{j}", "bool", [v is not None for v in vals]))
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
            decl += [c_array(f"lto{i}", "long long", values["off"]), c_array(f"ltc{i}", "unsigned char", values["chr"]),
                     c_array(f"lth{i}", "unsigned long long", values["hash"]),
                     c_array(f"lts{i}", "long long", values["slots"])]
            args += [f"lto{i}", f"ltc{i}", f"lth{i}", f"lts{i}", f"{len(values['slots']) - 1}LL"]
            continue
        decl += [c_array(f"lut{i}", "long long", values), c_array(f"lutv{i}", "bool", [1] * len(values))]
        args += [f"lut{i}", f"lutv{i}"]
    probes = [s for s in spec.stages if isinstance(s, ProbeStage)]
    for p, (stage, (t, payload)) in enumerate(zip(probes, builds)):
        decl += [c_array(f"s{p}", "long long", t["slots"]), c_array(f"k{p}", "long long", t["keys"]),
                 c_array(f"h{p}", "unsigned long long", t["hashes"]), c_array(f"st{p}", "long long", t["start"]),
                 c_array(f"ct{p}", "long long", t["count"]), c_array(f"r{p}", "long long", t["rows"]),
                 c_array(f"vi{p}", "long long", t["vidx"])]
        args += [f"s{p}", f"{t['cap'] - 1}ULL", f"k{p}", str(t["n"]), f"h{p}", f"st{p}", f"ct{p}", f"r{p}", f"vi{p}",
                 str(int(t["nonempty"])), str(int(t["has_null"]))]
        for j, (inp, vals) in enumerate(zip(stage.payload, payload)):
            decl.append(c_array(f"pay{p}_{j}", ctypes[inp.dtype.kind], [0 if v is None else v for v in vals]))
            args.append(f"pay{p}_{j}")
            if inp.nullable:
                decl.append(c_array(f"payv{p}_{j}", "bool", [v is not None for v in vals]))
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
