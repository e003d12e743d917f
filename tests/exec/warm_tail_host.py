"""Run by test_warm_tail_host_run.py in a fresh interpreter: a GPU connection on the CuPy stand-in
(scripts/host_only_gpu.py, fused aggregations filling their domains), the 13 SSB queries each on a
fresh connection per run (a warm run: no replay), first with the host tail's small sort and collection
through the pipeline driver (small_tail.WARM_DIRECT off), then without it. Prints one JSON line per
query: whether the tables are equal, the collections the leak check ran, the device bytes it found
left behind, and the query contexts still alive after the runs (reference cycles would keep them, and
the scans and device blocks they refer to, until a collection). ``--compiled-rows``: the dimensions'
rows through the stand-in's compiled row sinks (their string predicates' lookup tables kept), not
NumPy."""

from __future__ import annotations

import gc
import json
import os
import sys
import weakref
from pathlib import Path

if "--compiled-rows" not in sys.argv:
    os.environ["HETDB_GPU_COMPILE_OFF"] = "row_sinks"  # (the dimensions' rows through NumPy: real domains)
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

import host_only_gpu  # noqa: E402
import numpy as np  # noqa: E402

host_only_gpu.install()

from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402


def _pool_blocks() -> None:
    """The stand-in's arrays answer ``.data.mem`` (one object per allocation, with its size) as CuPy's
    do, so the leak check counts the device cache's kept arrays (exec/device.py cache_device_bytes)."""
    mems: dict[int, tuple] = {}

    class Mem:
        __slots__ = ("size", "__weakref__")

        def __init__(self, size: int) -> None:
            self.size = size

    class Pointer:
        __slots__ = ("ptr", "mem")

        def __init__(self, ptr: int, mem: Mem) -> None:
            self.ptr, self.mem = ptr, mem

        def memset_async(self, value: int, size: int, stream=None) -> None:
            real(self.ptr).memset_async(value, size, stream)

    real = host_only_gpu._Ptr

    def data(self):
        root = self
        while isinstance(root.base, np.ndarray):
            root = root.base
        got = mems.get(id(root))
        if got is None or got[1]() is not root:
            got = mems[id(root)] = (Mem(int(root.nbytes)), weakref.ref(root))
        return Pointer(int(self.__array_interface__["data"][0]), got[0])

    host_only_gpu.ndarray.data = property(data)


def main(db: str) -> None:
    host_only_gpu._no_compile()
    host_only_gpu._fill_groups()
    _pool_blocks()
    from hetdb.exec import device, small_tail
    from hetdb.exec.operators.base import ExecContext

    collections = [0]
    real_gc = device.gc

    class CountingGc:
        def __getattr__(self, name):
            return getattr(real_gc, name)

        def collect(self, *a):
            collections[0] += 1
            return real_gc.collect(*a)

    device.gc = CountingGc()

    def run(sql: str) -> tuple:
        con = hetdb.connect(db, device="gpu", create=False)
        try:
            r = con.sql(sql)
            return r.arrow(), r.stats.get("gpu_leaked_bytes", 0)
        finally:
            con.close()

    for name, sql in load_queries("ssb").items():
        run(sql)  # (the host tier loaded)
        small_tail.WARM_DIRECT = 0
        driver = run(sql)[0]
        small_tail.WARM_DIRECT = 1
        collections[0] = 0
        runs = [run(sql) for _ in range(3)]
        gc.collect()
        gc.disable()  # (what only a collection would free stays in gc.get_objects)
        runs += [run(sql) for _ in range(2)]
        alive = sum(1 for o in gc.get_objects() if isinstance(o, ExecContext))
        gc.enable()
        print(json.dumps({"query": name, "rows": driver.num_rows, "same": all(t.equals(driver) for t, _ in runs),
                          "collections": collections[0], "leaked": sum(n for _, n in runs),
                          "contexts_alive": alive}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
