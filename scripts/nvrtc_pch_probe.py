"""Where a generated kernel's NVRTC compile goes, and what NVRTC options would save (issue 15: a GPU
fuzz case's time is mostly compiles of new query shapes; every generated source is one inlined
header, pipeline.cuh or fused_pipeline.cuh, and a short kernel body).

    python3 scripts/nvrtc_pch_probe.py [--kernels K] [--seconds S]

Runs a few small GPU queries of different shapes and keeps the generated sources they compile (or
find in the kernel cache); then compiles up to K of them again, each as:

    inlined       as hetdb does (headers inlined, cubin for the device)
    ptx-only      the same to PTX only (virtual architecture): no ptxas, so cubin - ptx ~ ptxas
    fast-compile  inlined with -Ofast-compile=max (NVRTC 12.8+: less optimisation, faster compile)
    pch           ``#include "<header>"`` + body, the header files handed to NVRTC, ``--pch
                  --pch-dir=D`` (automatic precompiled header: the first compile creates it)

and prints the seconds of each (nan: NVRTC refused the option; its message follows), then totals.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

QUERIES = [
    "SELECT a % 7 AS k, count(*), sum(b) FROM t WHERE b > 0.3 GROUP BY 1",
    "SELECT count(*) FROM t WHERE a BETWEEN 10 AND 500 AND c <> 'x'",
    "SELECT t.c, count(*) FROM t JOIN u ON t.a = u.k WHERE u.w < 40 GROUP BY t.c",
    "SELECT sum(a * 2 + 1) FROM t WHERE b < 0.5 OR c = 'y'",
]


def compile_once(nvrtc, source: str, filename: str, options: list[str], headers: dict[str, str]) -> tuple[float, str]:
    """Seconds of one NVRTC compile (nan when it failed) and NVRTC's log (or the error)."""
    # (CuPy's createProgram takes the headers' sources and names as bytes)
    prog = nvrtc.createProgram(source, filename, [h.encode() for h in headers.values()],
                               [n.encode() for n in headers])
    t = time.perf_counter()
    try:
        nvrtc.compileProgram(prog, options)
        return time.perf_counter() - t, nvrtc.getProgramLog(prog).strip().replace("\n", " | ")[:240]
    except Exception as e:  # noqa: BLE001 - report and go on
        return float("nan"), f"{type(e).__name__}: {str(e)[:120]} {nvrtc.getProgramLog(prog).strip()[:200]}"
    finally:
        nvrtc.destroyProgram(prog)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=12.0)
    args = ap.parse_args()
    start = time.perf_counter()
    import numpy as np
    import pyarrow as pa

    import hetdb
    from hetdb import types as T
    from hetdb.backend.gpu import compile as C
    from hetdb.backend.gpu.codegen import pipeline_runtime, runtime
    from hetdb.storage import ColumnSpec, Database

    seen: dict[str, str] = {}
    original = runtime.compile_source

    def capture(source: str, filename: str = "fused.cu"):
        seen.setdefault(source, filename)
        return original(source, filename)

    runtime.compile_source = pipeline_runtime.compile_source = capture
    path = tempfile.mkdtemp(prefix="nvrtc-probe-db-") + "/db"
    db = Database.open(path, create=True)
    rng = np.random.default_rng(3)
    n = 20000
    with db.create_table("t", [ColumnSpec("a", T.INT64), ColumnSpec("b", T.FLOAT64), ColumnSpec("c", T.STRING)],
                         rows_per_page=4096) as w:
        w.append_arrow(pa.table({"a": rng.integers(0, 1000, n), "b": rng.random(n),
                                 "c": rng.choice(["x", "y", "z"], n).tolist()}))
    with db.create_table("u", [ColumnSpec("k", T.INT64), ColumnSpec("w", T.INT64)], rows_per_page=4096) as w:
        w.append_arrow(pa.table({"k": np.arange(1000), "w": rng.integers(0, 100, 1000)}))
    t0 = time.perf_counter()
    with hetdb.connect(path, device="gpu") as con:
        for q in QUERIES:
            con.sql(q).fetchall()
    print(f"{len(QUERIES)} queries in {time.perf_counter() - t0:.1f} s: {len(seen)} generated sources "
          f"({', '.join(seen.values())})", flush=True)

    import cupy

    nvrtc = C._nvrtc()
    cc = cupy.cuda.Device().compute_capability
    headers = {p.name: p.read_text() for p in C.KERNEL_DIR.glob("*.cuh")}
    prefixes = {h: C.load_source(h) for h in ("pipeline.cuh", "fused_pipeline.cuh")}
    pch_dir = tempfile.mkdtemp(prefix="nvrtc-probe-pch-")
    base = [*C.DEFAULT_OPTIONS]
    arch = f"--gpu-architecture=sm_{cc}"
    ways = {
        "inlined": lambda src, body: (src, {}, [*base, arch]),
        "ptx-only": lambda src, body: (src, {}, [*base, f"--gpu-architecture=compute_{cc}"]),
        "fast-compile": lambda src, body: (src, {}, [*base, arch, "-Ofast-compile=max"]),
        "pch": lambda src, body: (body, headers, [*base, arch, "--pch", f"--pch-dir={pch_dir}"]),
    }
    totals = dict.fromkeys(ways, 0.0)
    done = 0
    for source, filename in seen.items():
        header = next((h for h, p in prefixes.items() if source.startswith(p)), None)
        if header is None or done >= args.kernels or time.perf_counter() - start > args.seconds:
            continue
        body = f'#include "{header}"\n' + source[len(prefixes[header]):]
        line = []
        for name, way in ways.items():
            text, hdrs, options = way(source, body)
            secs, log = compile_once(nvrtc, text, filename, options, hdrs)
            totals[name] += secs
            line.append(f"{name} {secs:.2f} s" + (f" [{log}]" if log else ""))
        done += 1
        print(f"{filename} ({header}, body {len(source) - len(prefixes[header])} chars): " + "; ".join(line),
              flush=True)
    print(f"{done} kernels, seconds in all: " + ", ".join(f"{k} {v:.2f}" for k, v in totals.items()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
