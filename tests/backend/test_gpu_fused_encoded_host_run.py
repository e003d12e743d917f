"""A dense fused kernel over a page table that mixes plain pages with pages kept compressed (spec
``encoded``: per-page codec flags, fused::BlockLoadSelPage), *run* without a GPU: the generated text
plus fused_pipeline.cuh compiled with g++ under the sequential CUDA shim of
pipeline_host.py's shim (global-atomic aggregation: use_shared 0), against NumPy. Random-access
codecs only (const, for, dict): delta/rle tiles decode cooperatively, which the gpu-marked
tests/codec/test_gpu_compressed_kernels.py covers."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from pipeline_host import SHIM

from hetdb import types as T
from hetdb.backend.gpu.codegen import AGGREGATE, FusedPipelineSpec, generate
from hetdb.backend.gpu.codegen.generate import FP_BLOCK, FP_TILE
from hetdb.backend.gpu.codegen.spec import AggregateSpec
from hetdb.backend.gpu.compile import load_source
from hetdb.codec.encodings import encode_as
from hetdb.plan.expr import Call, ColumnRef, Literal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


def _bytes(name: str, buf: np.ndarray) -> str:
    return f"alignas(8) static const unsigned char {name}[] = {{{', '.join(str(int(b)) for b in buf)}}};"


@pytest.mark.parametrize("eager", [(), ("g", "v")], ids=["loaded-by-stage", "loaded-first"])
@pytest.mark.parametrize("codecs", [(), ("random", "random"), ("plain", "plain")],
                         ids=["any-codec", "random-access-variant", "plain-variant"])
def test_fused_page_table_with_compressed_pages(tmp_path, eager, codecs):
    """``codecs``: the kernel variant for the pages' encodings (FusedPipelineSpec.input_codecs; the
    plain variant over value arrays only), which must read them as the kernel for any codec does."""
    rng = np.random.default_rng(3)
    g_ref, v_ref = ColumnRef(T.INT32, "g", False), ColumnRef(T.INT64, "v", False)
    spec = FusedPipelineSpec((("g", T.INT32), ("v", T.INT64)),
                             (Call(T.BOOL, "lt", (v_ref, Literal(T.INT64, 1 << 40))),), (), (g_ref,),
                             (AggregateSpec("sum", v_ref), AggregateSpec("count_star")), AGGREGATE, encoded=True,
                             eager=eager, input_codecs=codecs)
    k = generate(spec)
    layout = [("plain", "for"), ("for", "dict"), ("const", "plain"), ("dict", "const"), ("plain", "plain")]
    if codecs == ("plain", "plain"):
        layout = [("plain", "plain")] * len(layout)
    decl, fill, gs, vs = [], [], [], []
    for p, (gc, vc) in enumerate(layout):
        n = 700 + 1024 * p  # tiles straddle the encoding's 1024-value blocks; partial last blocks
        g = np.full(n, 4, np.int32) if gc == "const" else rng.integers(0, 7, n).astype(np.int32)
        if vc == "const":
            v = np.full(n, -(1 << 35), np.int64)
        elif vc == "dict":
            v = rng.choice(np.array([-9, 4, 1 << 41, 77], np.int64), n)  # 1 << 41 is filtered out
        else:
            v = rng.integers(-(1 << 38), 1 << 38, n).astype(np.int64)
        for name, values, codec, ctype in (("g", g, gc, "int"), ("v", v, vc, "long long")):
            if codec == "plain":
                body = ", ".join(f"{int(x)}{'LL' if ctype == 'long long' else ''}" for x in values)
                decl.append(f"alignas(8) static const {ctype} {name}{p}[] = {{{body}}};")
            else:
                decl.append(_bytes(f"{name}{p}", encode_as(values, codec)))
            kk = 0 if name == "g" else 1
            fill.append(f"  pt[3 * NP + 1 + {p} * 2 + {kk}] = (long long)(const void*){name}{p};")
            fill.append(f"  pt[3 * NP + 1 + NP * 2 + {p} * 2 + {kk}] = {0 if codec == 'plain' else 1};")
        gs.append(g)
        vs.append(v)
    tiles, row = 0, 0
    for p, g in enumerate(gs):
        fill += [f"  pt[{p}] = {tiles};", f"  pt[NP + 1 + {p}] = {row};", f"  pt[2 * NP + 1 + {p}] = {len(g)};"]
        tiles += -(-len(g) // FP_TILE)
        row += len(g)
    fill.append(f"  pt[NP] = {tiles};")
    nacc = len(k.accumulators)
    main = [f"#define NP {len(layout)}", "static long long pt[3 * NP + 1 + NP * 4];",
            *[f"static long long acc{a}[7];" for a in range(nacc)],
            "static unsigned long long domain_errors[1], arith_err[4];",
            "#include <cstdlib>", "int main(int argc, char** argv) {", *fill,
            # the grid from the command line: blocks looping over several tiles, pages left behind
            f"  gridDim.x = argc > 1 ? std::atoi(argv[1]) : {tiles};",
            "  for (unsigned b = 0; b < gridDim.x; ++b) {", "    blockIdx.x = b;",
            f"    for (unsigned t = 0; t < {FP_BLOCK}; ++t) {{", "      threadIdx.x = t;",
            f"      {k.name}(nullptr, nullptr, 0, pt, NP, {tiles}, 0, 7, 1, 7, 0, "
            + ", ".join(f"acc{a}" for a in range(nacc)) + ", domain_errors, arith_err"
            + "".join(f", {lit.text}" for lit in k.literals) + ");",
            "    }", "  }",
            '  if (domain_errors[0] || arith_err[0]) { std::printf("FAIL\\n"); return 1; }',
            "  for (int g = 0; g < 7; ++g) std::printf(\"%d " + " ".join(["%lld"] * nacc) + "\\n\", g, "
            + ", ".join(f"acc{a}[g]" for a in range(nacc)) + ");",
            "  return 0;", "}"]
    body = k.body.replace("extern __shared__ long long fp_smem[];", "long long* fp_smem = nullptr;")  # use_shared 0
    src = SHIM + load_source("fused_pipeline.cuh") + "\n" + "\n".join(decl) + "\n" + body + "\n" + "\n".join(main)
    path = tmp_path / "fused.cpp"
    path.write_text(src)
    exe = tmp_path / "fused"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(path)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    g, v = np.concatenate(gs), np.concatenate(vs)
    keep = v < (1 << 40)
    for grid in (tiles, 1, 2, 5, 13, 25):  # a tile per block, then grid-stride loops (fused::NextPage)
        out = subprocess.run([str(exe), str(grid)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout[-2000:]
        got = {int(line.split()[0]): [int(x) for x in line.split()[1:]] for line in out.stdout.splitlines()}
        assert len(got) == 7
        for key in range(7):
            sel = keep & (g == key)
            assert got[key] == [int(sel.sum()), int(v[sel].sum()), int(sel.sum())], (grid, key)
