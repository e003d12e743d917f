"""Run in a fresh interpreter by test_stream_early_stop_host_run.py: a PageStreamer over a small table
with ``scripts/host_only_cupy.py`` standing in for CuPy (device arrays are NumPy arrays), stopped after
its first step with the consumer still holding that step's Batch and the iterator, then closed.
Prints one JSON line per mode: the device arrays the streamer allocated that are still alive, budget
bytes and host-tier pins left, the state of every generator it handed out, rows of the first step.

    python tests/backend/stream_early_stop_host.py DB MODE[,MODE...]   (modes: batched paged row-group)
"""

from __future__ import annotations

import gc
import inspect
import json
import sys
import weakref
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import host_only_cupy  # noqa: E402

cupy = host_only_cupy.install()
import numpy as np  # noqa: E402

allocated: list[weakref.ref] = []
_empty = cupy.empty


def _tracked_empty(shape, dtype=np.uint8, order="C"):
    a = _empty(shape, dtype)
    allocated.append(weakref.ref(a))
    return a


cupy.empty = _tracked_empty

from hetdb.backend.gpu.memory import DeviceMemoryBudget  # noqa: E402
from hetdb.backend.gpu.stream import PageStreamer  # noqa: E402
from hetdb.cache.host_cache import HostPageCache  # noqa: E402
from hetdb.storage import Database  # noqa: E402


def aligned(n: int) -> np.ndarray:
    raw = np.empty(n + 4096, dtype=np.uint8)
    start = (-raw.ctypes.data) % 4096
    return raw[start:start + n]


def run(reader, mode: str) -> dict:
    allocated.clear()
    columns = ["a", "b", "c"]
    budget = DeviceMemoryBudget(1 << 30)
    host = HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20, allocate=aligned)
    two_groups = sum(reader.page_location(c, 1).length for c in columns) + 1  # (test_gpu_stream_batch.per_group)
    s = PageStreamer(reader, columns, budget=budget, host_cache=host, depth=2, row_groups=[1, 2, 3, 4],
                     batch_bytes=0 if mode == "row-group" else two_groups, compressed=mode == "paged")
    it = s.batches()
    rgs, kept = next(it)  # the consumer keeps the step's Batch (as a suspended frame of its own would)
    rows = kept.num_rows
    handed = [it, *s._wrappers, s._gen]
    s.close()
    gc.collect()
    alive = [a for a in (r() for r in allocated) if a is not None]
    out = {"mode": mode, "row_groups": list(rgs), "rows": rows, "arrays_alive": len(alive),
           "bytes_alive": int(sum(a.nbytes for a in alive)), "budget_used": budget.used_bytes,
           "host_pinned": host.pinned_bytes(), "kept_columns": len(kept.columns),
           "generators": sorted({inspect.getgeneratorstate(g) for g in handed})}
    del alive
    return out


def main() -> None:
    reader = Database.open(sys.argv[1], create=False).table("t")
    for mode in sys.argv[2].split(","):
        print(json.dumps(run(reader, mode)), flush=True)


if __name__ == "__main__":
    main()
