"""A dense fused kernel with a payload probe over a page table, *run* without a GPU (the generated
text plus fused_pipeline.cuh under pipeline_host.py's sequential CUDA shim, global-atomic
aggregation), against NumPy: the payload read by build row (as planned by default) and by key
(DenseProbe.by_key, runtime.DenseJoinTable.keyed_payload), with the scanned columns loaded by stage
and first (spec.eager), at several grids (blocks looping over tiles and pages)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from pipeline_host import SHIM

from hetdb import types as T
from hetdb.backend.gpu.codegen import AGGREGATE, DenseProbe, FusedPipelineSpec, dense_build, generate
from hetdb.backend.gpu.codegen.generate import FP_ITEMS
from hetdb.backend.gpu.codegen.spec import AggregateSpec
from hetdb.backend.gpu.compile import load_source
from hetdb.plan.expr import Call, ColumnRef, Literal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


def _array(name: str, ctype: str, values) -> str:
    return f"static {ctype} {name}[] = {{{', '.join(str(int(x)) for x in values) or '0'}}};"


@pytest.mark.parametrize("by_key,eager,block,shape", [
    (False, (), 128, {}), (True, (), 128, {}), (False, ("k", "v"), 128, {}), (True, ("k", "v"), 128, {}),
    (False, ("k", "v"), 256, {}),  # (experiment fused_block256: a tile of 256 x 4 rows)
    # (the build rows probed with the next tile prefetched, streaming loads: fused_probe_forms'
    # shape where a probe's payload is no group key's ranks)
    (False, ("k",), 128, {"prefetch": True, "stream_loads": True, "batch_after": 0}),
], ids=["by-row-staged", "by-key-staged", "by-row-loaded-first", "by-key-loaded-first", "block256",
        "by-row-prefetched"])
def test_payload_probe_by_row_and_by_key(tmp_path, by_key, eager, block, shape):
    rng = np.random.default_rng(11)
    k_ref, v_ref, y_ref = ColumnRef(T.INT32, "k", False), ColumnRef(T.INT32, "v", False), ColumnRef(T.INT32, "y", False)
    spec = FusedPipelineSpec((("k", T.INT32), ("v", T.INT32)),
                             (Call(T.BOOL, "lt", (v_ref, Literal(T.INT32, 900))), Call(T.BOOL, "gt", (y_ref, Literal(T.INT32, 0)))),
                             (DenseProbe(k_ref, (("y", T.INT32),), by_key),), (y_ref,),
                             (AggregateSpec("sum", v_ref), AggregateSpec("count_star")), AGGREGATE, eager=eager,
                             block=block, **shape)
    kernel = generate(spec)
    assert f"#define FP_BLOCK {block}" in kernel.body and f"#define FP_TILE {block * FP_ITEMS}" in kernel.body
    # the build: 300 keys from 100 with gaps, a payload y in 0..4 per build row
    bkeys = rng.choice(np.arange(100, 500), 300, replace=False).astype(np.int32)
    ys = rng.integers(0, 5, 300).astype(np.int32)
    table = dense_build(bkeys, [ys])
    pay = table.keyed_payload()[0] if by_key else table.payload[0]
    sizes = [700, 1, 2048 + 5, 513]
    pages = [(rng.integers(50, 560, n).astype(np.int32), rng.integers(0, 1000, n).astype(np.int32)) for n in sizes]
    decl = [_array("rows", "int", table.rows), _array("pay", "int", pay)]
    fill, tiles, row = [], 0, 0
    for p, (k, v) in enumerate(pages):
        decl += [_array(f"k{p}", "int", k), _array(f"v{p}", "int", v)]
        fill += [f"  pt[{p}] = {tiles};", f"  pt[NP + 1 + {p}] = {row};", f"  pt[2 * NP + 1 + {p}] = {len(k)};",
                 f"  pt[3 * NP + 1 + {p} * 2 + 0] = (long long)(const void*)k{p};",
                 f"  pt[3 * NP + 1 + {p} * 2 + 1] = (long long)(const void*)v{p};"]
        tiles += -(-len(k) // (block * FP_ITEMS))
        row += len(k)
    fill.append(f"  pt[NP] = {tiles};")
    nacc = len(kernel.accumulators)
    main = [f"#define NP {len(pages)}", "static long long pt[3 * NP + 1 + NP * 2];",
            *[f"static long long acc{a}[5];" for a in range(nacc)],
            "static unsigned long long domain_errors[1], arith_err[4];",
            "#include <cstdlib>", "int main(int argc, char** argv) {", *fill,
            "  gridDim.x = std::atoi(argv[1]);", "  for (unsigned b = 0; b < gridDim.x; ++b) {", "    blockIdx.x = b;",
            f"    for (unsigned t = 0; t < {block}; ++t) {{", "      threadIdx.x = t;",
            f"      {kernel.name}(nullptr, nullptr, 0, pt, NP, {tiles}, rows, {table.lo}, {table.size}, pay, "
            "0, 5, 1, 5, 0, " + ", ".join(f"acc{a}" for a in range(nacc)) + ", domain_errors, arith_err"
            + "".join(f", {lit.text}" for lit in kernel.literals) + ");",
            "    }", "  }",
            '  if (domain_errors[0] || arith_err[0]) { std::printf("FAIL\\n"); return 1; }',
            "  for (int g = 0; g < 5; ++g) std::printf(\"%d " + " ".join(["%lld"] * nacc) + "\\n\", g, "
            + ", ".join(f"acc{a}[g]" for a in range(nacc)) + ");",
            "  return 0;", "}"]
    body = kernel.body.replace("extern __shared__ long long fp_smem[];", "long long* fp_smem = nullptr;")
    src = SHIM + load_source("fused_pipeline.cuh") + "\n" + "\n".join(decl) + "\n" + body + "\n" + "\n".join(main)
    path = tmp_path / "probe.cpp"
    path.write_text(src)
    exe = tmp_path / "probe"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(path)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    k = np.concatenate([p[0] for p in pages])
    v = np.concatenate([p[1] for p in pages]).astype(np.int64)
    y_of = dict(zip(bkeys.tolist(), ys.tolist()))
    y = np.array([y_of.get(int(x), -1) for x in k])
    keep = (y > 0) & (v < 900)
    for grid in (tiles, 1, 3):
        out = subprocess.run([str(exe), str(grid)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout[-2000:]
        got = {int(line.split()[0]): [int(x) for x in line.split()[1:]] for line in out.stdout.splitlines()}
        assert sum(got[g][0] for g in got) == int(keep.sum()) > 0
        for g in range(5):
            sel = keep & (y == g)
            assert got[g] == [int(sel.sum()), int(v[sel].sum()), int(sel.sum())], (grid, g)
