"""Dense fused kernels whose probes read the narrow forms of their tables (spec.DenseProbe.form:
membership bitmaps, 1- and 2-byte payload codes per key; DenseJoinTable.probe_arrays), with the
columns left loaded at once after a probe (spec.batch_after), the next tile's eager columns
prefetched (spec.prefetch) and streaming loads (spec.stream_loads), *run* without a GPU (the
generated text plus fused_pipeline.cuh under pipeline_host.py's sequential CUDA shim, global-atomic
aggregation) over a page table of pages that are not whole tiles, at several grids, against NumPy."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest
from pipeline_host import SHIM

from hetdb import types as T
from hetdb.backend.gpu.codegen import (
    AGGREGATE,
    DenseJoinTable,
    DenseProbe,
    FusedPipelineSpec,
    dense_build,
    generate,
)
from hetdb.backend.gpu.codegen.generate import batch_point
from hetdb.backend.gpu.codegen.spec import AggregateSpec
from hetdb.backend.gpu.compile import load_source
from hetdb.plan.expr import Call, ColumnRef, Literal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

I32 = T.INT32


def _ref(cid: str) -> ColumnRef:
    return ColumnRef(I32, cid, False)


def _array(name: str, ctype: str, values) -> str:
    return f"static {ctype} {name}[] = {{{', '.join(str(int(x)) for x in values) or '0'}}};"


def _spec(forms: tuple[str, str, str] = ("bits", "code8", "code16"), **kw) -> FusedPipelineSpec:
    """a -> bits probe, b -> code8 probe (payload y, filtered y > 0), c -> code16 probe (payload z);
    group by y, z; sum(v), count(*) where v < 900."""
    return FusedPipelineSpec(
        (("a", I32), ("b", I32), ("c", I32), ("v", I32)),
        (Call(T.BOOL, "lt", (_ref("v"), Literal(I32, 900))), Call(T.BOOL, "gt", (_ref("y"), Literal(I32, 0)))),
        (DenseProbe(_ref("a"), (), form=forms[0]), DenseProbe(_ref("b"), (("y", I32),), form=forms[1]),
         DenseProbe(_ref("c"), (("z", I32),), form=forms[2])),
        (_ref("y"), _ref("z")), (AggregateSpec("sum", _ref("v")), AggregateSpec("count_star")), AGGREGATE, **kw)


@pytest.mark.parametrize("kw", [
    {},
    {"eager": ("a", "b"), "batch_after": 1, "stream_loads": True},
    {"eager": ("a", "b"), "prefetch": True},
    {"eager": ("a", "b"), "batch_after": 1, "stream_loads": True, "prefetch": True},
    {"eager": ("a", "b"), "batch_after": 1, "prefetch": True, "block": 256},
    {"eager": ("a", "b"), "batch_after": 1, "stream_loads": True, "prefetch": True, "items": 8},
    {"eager": ("a", "b"), "batch_after": 1, "prefetch": True, "forms": ("bits", "bits_code8", "bits_code16")},
], ids=["forms", "batched-streaming", "prefetched", "all", "all-block256", "all-8-items", "bitmaps-first"])
def test_probe_forms(tmp_path, kw):
    rng = np.random.default_rng(5)
    spec = _spec(**kw)
    assert spec.unfusable_reason() is None
    kernel = generate(spec)
    tile = spec.block * spec.items
    if kw.get("prefetch"):
        assert "nx0[i]" in kernel.body and "fused::NextPage(page_table, num_pages, nt, nx_page)" in kernel.body
    # three dimensions over key ranges with gaps; y in 0..4 (code8), z in 0..299 (code16)
    da = rng.choice(np.arange(100, 700), 250, replace=False).astype(np.int32)
    db = rng.choice(np.arange(0, 400), 300, replace=False).astype(np.int32)
    dc = rng.choice(np.arange(1000, 1300), 200, replace=False).astype(np.int32)
    ys = rng.integers(0, 5, 300).astype(np.int32)
    zs = rng.integers(0, 300, 200).astype(np.int32)
    ta, tb, tc = dense_build(da), dense_build(db, [ys]), dense_build(dc, [zs])
    bits, code8, code16 = ta.probe_arrays("bits"), tb.probe_arrays("code8"), tc.probe_arrays("code16")
    assert bits.dtype == np.uint32 and code8.dtype == np.int8 and code16.dtype == np.int16
    sizes = [700, 1, 2 * tile + 5, tile + 1]
    pages = [tuple(rng.integers(lo, hi, n).astype(np.int32) for lo, hi in ((50, 760), (-5, 410), (990, 1310), (0, 1000)))
             for n in sizes]
    decl = [_array("bits", "unsigned int", bits), _array("code8", "signed char", code8),
            _array("code16", "short", code16), _array("bits8", "unsigned int", tb.probe_arrays("bits")),
            _array("bits16", "unsigned int", tc.probe_arrays("bits"))]
    first = [f.startswith("bits_") for f in kw.get("forms", ("bits", "code8", "code16"))]
    fill, tiles, row = [], 0, 0
    for p, cols in enumerate(pages):
        fill += [f"  pt[{p}] = {tiles};", f"  pt[NP + 1 + {p}] = {row};", f"  pt[2 * NP + 1 + {p}] = {len(cols[0])};"]
        for k, c in enumerate(cols):
            decl.append(_array(f"c{p}_{k}", "int", c))
            fill.append(f"  pt[3 * NP + 1 + {p} * 4 + {k}] = (long long)(const void*)c{p}_{k};")
        tiles += -(-len(cols[0]) // (tile))
        row += len(cols[0])
    fill.append(f"  pt[NP] = {tiles};")
    for k in range(4):  # the same rows as one flat batch (no page table)
        decl.append(_array(f"flat{k}", "int", np.concatenate([p[k] for p in pages])))
    flat_tiles = -(-row // (tile))
    nacc = len(kernel.accumulators)
    groups = 5 * 300

    def call(cols: str, n: int, table: str, num_tiles: int) -> str:
        return (f"{kernel.name}({cols}, {n}, {table}, {num_tiles}, "
                f"bits, {ta.lo}, {ta.size}, {'bits8, ' if first[1] else ''}code8, {tb.lo}, {tb.size}, "
                f"{'bits16, ' if first[2] else ''}code16, {tc.lo}, {tc.size}, "
                f"0, 5, 300, 0, 300, 1, {groups}, 0, " + ", ".join(f"acc{a}" for a in range(nacc))
                + ", domain_errors, arith_err" + "".join(f", {lit.text}" for lit in kernel.literals) + ");")
    main = [f"#define NP {len(pages)}", "static long long pt[3 * NP + 1 + NP * 4];",
            *[f"static long long acc{a}[{groups}];" for a in range(nacc)],
            "static unsigned long long domain_errors[1], arith_err[4];",
            "#include <cstdlib>", "int main(int argc, char** argv) {", *fill,
            "  gridDim.x = std::atoi(argv[1]);", "  for (unsigned b = 0; b < gridDim.x; ++b) {", "    blockIdx.x = b;",
            f"    for (unsigned t = 0; t < {spec.block}; ++t) {{", "      threadIdx.x = t;",
            "      if (argc > 2) " + call("flat0, flat1, flat2, flat3", row, "nullptr, 0", flat_tiles),
            "      else " + call("nullptr, nullptr, nullptr, nullptr", 0, "pt, NP", tiles),
            "    }", "  }",
            '  if (domain_errors[0] || arith_err[0]) { std::printf("FAIL\\n"); return 1; }',
            f"  for (int g = 0; g < {groups}; ++g) if (acc0[g]) std::printf(\"%d " + " ".join(["%lld"] * nacc)
            + "\\n\", g, " + ", ".join(f"acc{a}[g]" for a in range(nacc)) + ");",
            "  return 0;", "}"]
    body = kernel.body.replace("extern __shared__ long long fp_smem[];", "long long* fp_smem = nullptr;")
    src = SHIM + load_source("fused_pipeline.cuh") + "\n" + "\n".join(decl) + "\n" + body + "\n" + "\n".join(main)
    path = tmp_path / "forms.cpp"
    path.write_text(src)
    exe = tmp_path / "forms"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(path)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    a, b, c, v = (np.concatenate([p[k] for p in pages]) for k in range(4))
    y_of, z_of = dict(zip(db.tolist(), ys.tolist())), dict(zip(dc.tolist(), zs.tolist()))
    y = np.array([y_of.get(int(x), -1) for x in b])
    z = np.array([z_of.get(int(x), -1) for x in c])
    keep = np.isin(a, da) & (y > 0) & (z >= 0) & (v < 900)
    g = y * 300 + z
    want = {int(k): [int((keep & (g == k)).sum()), int(v[keep & (g == k)].astype(np.int64).sum()),
                     int((keep & (g == k)).sum())] for k in np.unique(g[keep])}
    assert len(want) > 20
    for grid, flat in ((tiles, False), (1, False), (3, False), (flat_tiles, True), (2, True)):
        out = subprocess.run([str(exe), str(grid), *(["flat"] if flat else [])], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stdout[-2000:]
        got = {int(line.split()[0]): [int(x) for x in line.split()[1:]] for line in out.stdout.splitlines()}
        assert got == want, (grid, flat)


def test_probe_arrays_and_refusals():
    rng = np.random.default_rng(3)
    keys = rng.choice(np.arange(10, 5000), 900, replace=False).astype(np.int64)
    pay = rng.integers(0, 127, 900).astype(np.int32)
    t = dense_build(keys, [pay])
    bits = t.probe_arrays("bits")
    k = np.arange(t.size)
    assert np.array_equal((bits[k >> 5] >> (k & 31)) & 1, (t.rows >= 0).astype(np.uint32))
    code = t.probe_arrays("code8")
    assert np.array_equal(code[keys - t.lo], pay) and (code[t.rows < 0] == -1).all()
    assert t.probe_arrays("code8") is code  # (kept with the table, and counted with what it holds)
    assert any(a is code for a in t.held_arrays()) and any(a is bits for a in t.held_arrays())
    # a table built on the host carries its (slot, build row) pairs: the codes scatter through them
    slots = np.flatnonzero(t.rows >= 0)
    hosted = DenseJoinTable(t.rows, t.lo, t.size, [pay], t.num_rows, hits=(slots, t.rows[slots]))
    assert np.array_equal(hosted.probe_arrays("code16"), t.probe_arrays("code16"))
    too_big = dense_build(keys, [pay + 200])
    with pytest.raises(ValueError, match="code8"):
        too_big.probe_arrays("code8")
    assert too_big.probe_arrays("code16")[keys[0] - too_big.lo] == pay[0] + 200
    assert dataclasses.replace(_spec(), output="selection", group_keys=(), aggregates=()).unfusable_reason() == \
        "a bits probe has no build rows for a selection"
    two = dataclasses.replace(_spec(), probes=(DenseProbe(_ref("a"), (("y", I32),), form="bits"),))
    assert two.unfusable_reason() == "a bits probe carries no payload"
    assert dataclasses.replace(_spec(), batch_after=3).unfusable_reason() == "batch_after 3 is not a probe"


def test_batch_point():
    """SSB q2.1's shape: lo_orderdate and lo_revenue load together after the part probe (1/5 x 1/25
    of the rows left, in 2/3 of the warps: the date probe keeps them all, so lo_revenue's own round
    trip would come for as many warps, and the batch reads no sector more); not when the date probe
    drops most rows (lo_revenue's round trip then rare, its batched sectors not)."""
    spec = FusedPipelineSpec(
        (("lo_partkey", I32), ("lo_suppkey", I32), ("lo_orderdate", I32), ("lo_revenue", I32)), (),
        (DenseProbe(_ref("lo_suppkey")), DenseProbe(_ref("lo_partkey"), (("b", I32),)),
         DenseProbe(_ref("lo_orderdate"), (("d", I32),))),
        (_ref("d"), _ref("b")), (AggregateSpec("sum", _ref("lo_revenue")),), AGGREGATE,
        eager=("lo_partkey", "lo_suppkey"))
    assert batch_point(spec, [0.2, 0.04, 1.0]) == 1
    assert batch_point(spec, [0.2, 0.9, 1.0]) == 1  # (after the supplier probe: as many round trips)
    assert batch_point(spec, [0.2, 0.04, 0.001]) == -1
    assert batch_point(dataclasses.replace(spec, eager=()), [1.0, 1.0, 1.0]) == 0
    body = generate(dataclasses.replace(spec, batch_after=1)).body
    probe2 = body.index("// probe 2")
    assert body.index("v2[FP_ITEMS];") < probe2 and body.index("v3[FP_ITEMS];") < probe2


def test_forms_name_the_kernel():
    """Each shape is its own kernel (the name hashes the text; compile.py's cache keys the source)
    and its own spec text."""
    specs = [_spec(), _spec(("bits", "bits_code8", "code16")), _spec(eager=("a",), prefetch=True),
             _spec(eager=("a",), prefetch=True, stream_loads=True), _spec(batch_after=0), _spec(items=8),
             dataclasses.replace(_spec(), probes=tuple(dataclasses.replace(p, form="rows") for p in _spec().probes))]
    assert len({generate(s).name for s in specs}) == len({s.describe() for s in specs}) == len(specs)
    text = specs[3].describe()
    assert "(bits)" in text and "(code8)" in text and "prefetched" in text and "streaming" in text
    assert "__ldcs" not in generate(specs[0]).body and "BlockLoadSel<FP_BLOCK, FP_ITEMS, true>" in generate(specs[3]).body


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_forms_compile_with_nvcc(tmp_path):
    """Every probe form, batched, prefetched and streaming, over value arrays and over pages of
    each encoding class (the kernel variants runtime.FusedPipeline.variant makes): one source."""
    from hetdb.backend.gpu.nvcc_check import nvcc_check

    base = _spec(("bits", "bits_code8", "code16"), eager=("a", "b"), batch_after=1, stream_loads=True, prefetch=True)
    specs = [base, *(dataclasses.replace(base, encoded=True, input_codecs=(c,) * 4) for c in ("plain", "random", "any"))]
    kernels = [generate(s) for s in specs]
    assert ["nx0[i]" in k.body for k in kernels] == [True, True, False, False]  # (eager pages encoded: none)
    source = kernels[0].full_source() + "\n" + "\n".join(k.body for k in kernels[1:])
    result = nvcc_check(source, tmp_path, "forms")
    assert result.returncode == 0, result.stderr[-3000:]
