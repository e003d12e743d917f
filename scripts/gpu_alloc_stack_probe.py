"""Which allocations of CuPy's device memory pool a query leaves in use, and where each was made.

A CuPy ``MemoryHook`` on every thread (hooks are per thread: the process's threads made after the
probe starts run their targets inside it, the main thread too) records each pool allocation with the
Python stack that made it and drops it when the block goes back to the pool. After each query the
probe lists the allocations made during the query that are still in use, grouped by stack, beside
the ``gpu_leaked_bytes`` the engine reported and the bytes kept across queries by design (the page
cache, the LIKE patterns kept for launches: DeviceResources.kept_device_bytes). An allocation the
engine does not count as kept is what its leak check reports.

    python3 scripts/gpu_alloc_stack_probe.py --suite tpch --queries q13 --runs 2 \
        --option gpu_coprocess=on --option gpu_batch_bytes=67108864 --option threads=4

``--suite orders``: tests/exec/like_orders.py's table and query (TPC-H q13's orders aggregation behind
NOT LIKE; no tpchgen-cli needed), as query ``like``.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "differential"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "exec"))

from scripts_common import parse_options  # noqa: E402

LIVE: dict[int, tuple] = {}  # mem_ptr -> (sequence, pool bytes, thread name, stack)
SEQ = [0]
LOCK = threading.Lock()


def _stack(depth: int = 12) -> tuple:
    f = sys._getframe(2)  # (the caller of the hook's method: CuPy's pool is Cython, no frame)
    out = []
    while f is not None and len(out) < depth:
        name = f.f_code.co_filename
        if "cupy" not in name or "hetdb" in name:
            out.append(f"{name.split('/src/')[-1].split('/scripts/')[-1]}:{f.f_lineno} {f.f_code.co_name}")
        f = f.f_back
    return tuple(out)


_CLASS: list = []


def _hook_class():
    if _CLASS:
        return _CLASS[0]
    from cupy.cuda import memory_hook

    class Recorder(memory_hook.MemoryHook):
        name = "hetdb_alloc_stacks"

        def malloc_postprocess(self, **kw) -> None:
            with LOCK:
                SEQ[0] += 1
                LIVE[int(kw["mem_ptr"])] = (SEQ[0], int(kw["mem_size"]), threading.current_thread().name, _stack())

        def free_postprocess(self, **kw) -> None:
            with LOCK:
                LIVE.pop(int(kw["mem_ptr"]), None)

    _CLASS.append(Recorder)
    return Recorder


def install() -> None:
    """The recorder on the calling thread and on every thread started from now on."""
    hook = _hook_class()()
    hook.__enter__()
    run = threading.Thread.run

    def hooked(self) -> None:
        with _hook_class()():
            run(self)

    threading.Thread.run = hooked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="tpch", help="tpch, ssb or orders")
    ap.add_argument("--queries", default="q13")
    ap.add_argument("--sf", type=float, default=0.002)
    ap.add_argument("--rows-per-page", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--option", action="append", default=[])
    args = ap.parse_args()
    install()
    from diff_data import build_ssb, build_tpch
    from diff_queries import load_queries

    import hetdb

    opts = parse_options(args.option)
    path = os.path.join(tempfile.mkdtemp(), args.suite)
    if args.suite == "orders":
        from like_orders import SQL, build_orders

        build_orders(path)
        queries = {"like": SQL}
    else:
        (build_tpch if args.suite == "tpch" else build_ssb)(path, args.sf, args.rows_per_page)
        queries = load_queries(args.suite)
    names = [q for q in args.queries.split(",") if q in queries]
    with hetdb.connect(path, device="gpu", **opts) as con:
        for run in range(args.runs):
            for name in names:
                _probe(con, f"run {run} {args.suite} {name}", queries[name])


def _probe(con, label: str, sql: str) -> None:
    from hetdb.backend.gpu.codegen import runtime

    seq0, patterns0 = SEQ[0], runtime.kept_pattern_bytes()
    res = con.sql(sql)
    res.arrow()
    st = dict(res.stats or {})
    gc.collect()
    device = con._get_engine().device
    with LOCK:
        held = [v for v in LIVE.values() if v[0] > seq0]
    by_stack: dict[tuple, list] = {}
    for _seq, size, thread, stack in held:
        by_stack.setdefault((thread.split("_")[0], stack), []).append(size)
    print(f"{label}: engine reported leaked {st.get('gpu_leaked_bytes', 0):,} B; {len(held)} pool blocks "
          f"({sum(v[1] for v in held):,} B) made in the query still in use; kept LIKE patterns "
          f"{runtime.kept_pattern_bytes() - patterns0:+,} B; page cache {device.cache_device_bytes():,} B",
          flush=True)
    for (thread, stack), sizes in sorted(by_stack.items(), key=lambda kv: -sum(kv[1]))[:8]:
        print(f"   {len(sizes)} x {sizes[0]:,} B ({sum(sizes):,} B) on thread {thread}:", flush=True)
        for frame in stack[:10]:
            print(f"      {frame}", flush=True)


if __name__ == "__main__":
    main()
