"""Find the device arrays a GPU query leaves behind (``gpu_leaked_bytes`` > 0).

Runs suite queries on a small generated database under the given connection options and, after
each query that leaks, lists every CuPy array alive now that was not alive before the query, with
the chain of objects that keeps it alive (type and attribute/key names), so the owner can be found.

    python3 scripts/gpu_leak_probe.py --suite tpch --queries q10,q12,q16 \
        --option gpu_coprocess=on --option gpu_batch_bytes=0 --option gpu_memory_limit=24MB
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "differential"))

from scripts_common import parse_options  # noqa: E402


def _device_objects() -> list:
    import cupy

    kinds = (cupy.ndarray, cupy.cuda.MemoryPointer)
    return [o for o in gc.get_objects() if isinstance(o, kinds)]


def _owner_chain(obj: object, ignore: list, depth: int = 7) -> list[str]:
    """The referrers of ``obj`` up to ``depth`` levels (first referrer each level that is not a
    frame nor one of the probe's own lists)."""
    chain: list[str] = []
    cur = obj
    seen = {id(obj), id(ignore), id(chain)}
    for _ in range(depth):
        refs = [r for r in gc.get_referrers(cur)
                if id(r) not in seen and not isinstance(r, type(sys._getframe()))]
        if not refs:
            break
        r = refs[0]
        seen.add(id(r))
        if isinstance(r, dict):
            keys = [k for k, v in r.items() if v is cur]
            chain.append(f"dict[{keys[:2]!r}]")
        elif isinstance(r, (list, tuple)):
            chain.append(f"{type(r).__name__}(len {len(r)})")
        else:
            chain.append(type(r).__module__ + "." + type(r).__qualname__)
        cur = r
    return chain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="tpch", help="tpch, ssb, or both in order (ssb,tpch)")
    ap.add_argument("--queries", default="")
    ap.add_argument("--sf", type=float, default=0.002)
    ap.add_argument("--rows-per-page", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--option", action="append", default=[])
    args = ap.parse_args()
    from diff_data import build_ssb, build_tpch
    from diff_queries import load_queries

    import hetdb

    opts = parse_options(args.option)
    cons = []
    try:
        for suite in args.suite.split(","):
            path = os.path.join(tempfile.mkdtemp(), suite)
            (build_tpch if suite == "tpch" else build_ssb)(path, args.sf, args.rows_per_page)
            queries = load_queries(suite)
            names = [q for q in args.queries.split(",") if q in queries] or list(queries)
            cons.append(hetdb.connect(path, device="gpu", **opts))  # kept open, as the tests do
            for run in range(args.runs):
                for name in names:
                    _probe(cons[-1], f"run {run} {suite} {name}", queries[name])
    finally:
        for con in cons:
            con.close()


def _probe(con, label: str, sql: str) -> None:
    before = {id(o) for o in _device_objects()}
    res = con.sql(sql)
    res.arrow()
    leak = dict(res.stats or {}).get("gpu_leaked_bytes", 0)
    print(f"{label}: leaked {leak:,} B")
    if not leak:
        return
    gc.collect()
    new = [o for o in _device_objects() if id(o) not in before]
    for arr in new:
        what = (f"array {arr.dtype} {arr.shape} {arr.nbytes:,} B" if hasattr(arr, "shape")
                else f"pointer {arr.mem.size:,} B")
        print(f"   new {what}  <- " + " <- ".join(_owner_chain(arr, new)))
    new.clear()


if __name__ == "__main__":
    main()
