"""How much of a generated kernel's NVRTC compile NVRTC's automatic precompiled header would save
(issue 15: a GPU fuzz case's time is mostly compiles of new query shapes; every generated source is
the same inlined header, pipeline.cuh or fused_pipeline.cuh, and a short kernel body).

    python3 scripts/nvrtc_pch_probe.py [--queries N]

Runs a few small GPU queries of different shapes (a fresh kernel cache, so each compiles) and keeps
the sources NVRTC was given; then compiles each again: as hetdb does (headers inlined), and as
``#include "<header>"`` + body with the header files handed to NVRTC and ``--pch --pch-dir=D``
(the first compile creates the PCH, the others use it). Prints per source the seconds of both and
NVRTC's PCH messages, then the totals.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

QUERIES = [
    "SELECT a % 7 AS k, count(*), sum(b) FROM t WHERE b > 0.3 GROUP BY 1",
    "SELECT count(*) FROM t WHERE a BETWEEN 10 AND 500 AND c <> 'x'",
    "SELECT min(b), max(a) FROM t WHERE NOT (a > 100)",
    "SELECT c, avg(b) FROM t WHERE a % 3 = 1 GROUP BY c",
    "SELECT t.c, count(*) FROM t JOIN u ON t.a = u.k WHERE u.w < 40 GROUP BY t.c",
    "SELECT sum(a * 2 + 1) FROM t WHERE b < 0.5 OR c = 'y'",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=len(QUERIES))
    args = ap.parse_args()
    os.environ["HETDB_KERNEL_CACHE"] = tempfile.mkdtemp(prefix="nvrtc-probe-cache-")
    import numpy as np
    import pyarrow as pa

    import hetdb
    from hetdb import types as T
    from hetdb.backend.gpu import compile as C
    from hetdb.storage import ColumnSpec, Database

    seen: list[tuple[str, str, tuple]] = []
    inner = C._compile_cubin

    def capture(nvrtc, source, filename, options, names, cc):
        t = time.perf_counter()
        try:
            return inner(nvrtc, source, filename, options, names, cc)
        finally:
            seen.append((source, filename, tuple(options), time.perf_counter() - t))

    C._compile_cubin = capture
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
        for q in QUERIES[:args.queries]:
            con.sql(q).fetchall()
    print(f"{args.queries} queries in {time.perf_counter() - t0:.1f} s; {len(seen)} NVRTC compiles, "
          f"{sum(s[3] for s in seen):.1f} s: " + ", ".join(f"{f} {s:.2f}" for _, f, _, s in seen), flush=True)

    nvrtc = C._nvrtc()
    import cupy

    cc = cupy.cuda.Device().compute_capability
    headers = {p.name: p.read_text() for p in C.KERNEL_DIR.glob("*.cuh")}
    prefixes = {h: C.load_source(h) for h in ("pipeline.cuh", "fused_pipeline.cuh")}
    pch_dir = tempfile.mkdtemp(prefix="nvrtc-probe-pch-")
    tot = [0.0, 0.0]
    for source, filename, options, _ in seen:
        header = next((h for h, p in prefixes.items() if source.startswith(p)), None)
        if header is None:
            continue  # (a module of kernels/*.cu, not a generated kernel)
        t = time.perf_counter()
        inner(nvrtc, source, filename, options, (), cc)
        plain = time.perf_counter() - t
        body = f'#include "{header}"\n' + source[len(prefixes[header]):]
        base = [*options, f"--gpu-architecture=sm_{cc}", "--pch", f"--pch-dir={pch_dir}"]
        pch, log = float("nan"), ""
        for extra in (["--pch-verbose=true"], []):
            prog = nvrtc.createProgram(body, filename, list(headers.values()), list(headers))
            t = time.perf_counter()
            try:
                nvrtc.compileProgram(prog, base + extra)
                pch = time.perf_counter() - t
                log = nvrtc.getProgramLog(prog).strip().replace("\n", " | ")[:300]
                break
            except Exception as e:  # noqa: BLE001 - report and go on
                log = f"{type(e).__name__}: {e} {nvrtc.getProgramLog(prog).strip()[:300]}"
            finally:
                nvrtc.destroyProgram(prog)
        tot[0] += plain
        tot[1] += pch
        print(f"{filename} ({header}, body {len(source) - len(prefixes[header])} chars): inlined {plain:.2f} s, "
              f"include+pch {pch:.2f} s; {log}", flush=True)
    print(f"generated kernels: inlined {tot[0]:.2f} s, include+pch {tot[1]:.2f} s; "
          f"pch dir {sum(f.stat().st_size for f in Path(pch_dir).iterdir()) >> 20} MiB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
