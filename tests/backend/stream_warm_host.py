"""Run in a fresh interpreter by test_stream_warm_host_run.py: warm scans (every page in the pinned host
tier, route 'copy', batched deliveries) with ``scripts/host_only_cupy.py`` standing in for CuPy, with
the warm groups (backend/gpu/stream.WARM_GROUPS) and the kept copies (backend/gpu/batch.KEEP_COPIES)
on and off. Prints one JSON line per (warm groups, kept copies): per scan (each run twice, the second
finding the plan's copies kept) the deliveries' row groups, whether their values are the pages', the
copies made (calls, bytes), the scan's statistics and route counts, and what it left held; then a scan
stopped after its first delivery.

    python tests/backend/stream_warm_host.py DB
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import host_only_cupy  # noqa: E402

host_only_cupy.install()
import numpy as np  # noqa: E402

from hetdb.backend.gpu import batch, stream  # noqa: E402
from hetdb.backend.gpu.memory import DeviceMemoryBudget  # noqa: E402
from hetdb.backend.gpu.stream import PageStreamer  # noqa: E402
from hetdb.cache.host_cache import HostPageCache  # noqa: E402
from hetdb.cache.router import PageRouter  # noqa: E402
from hetdb.storage import Database  # noqa: E402

COLUMNS = ["a", "b", "c"]


def aligned(n: int) -> np.ndarray:
    raw = np.empty(n + 4096, dtype=np.uint8)
    start = (-raw.ctypes.data) % 4096
    return raw[start:start + n]


def scan(reader, host, stop_after: int | None = None, prime: bool = False) -> dict:
    per_group = sum(reader.page_location(c, 0).length for c in COLUMNS)
    budget = DeviceMemoryBudget(1 << 30)
    host_only_cupy.copies[:] = [0, 0]
    s = PageStreamer(reader, COLUMNS, budget=budget, host_cache=host, router=PageRouter("copy", gpu=True),
                     batch_bytes=2 * per_group, overlap=True)
    it = s.prime(1 << 40) if prime else s.deliveries()
    got, exact = [], True
    for rgs, parts in it:
        got.append(list(rgs))
        for c in COLUMNS:
            want = np.concatenate([np.asarray(reader.read(c, rg).data) for rg in rgs])
            have = np.concatenate([np.asarray(p.columns[c].data) for p in parts])
            exact &= bool(np.array_equal(want, have))
        if stop_after is not None and len(got) >= stop_after:
            break
    s.close()
    return {"deliveries": got, "exact": exact, "copies": list(host_only_cupy.copies),
            "stats": {k: v for k, v in s.stats.as_dict().items() if k != "seconds"},
            "routes": [s.routes.pages, s.routes.bytes, s.routes.deliveries],
            "budget_used": budget.used_bytes, "host_pinned": host.pinned_bytes()}


def main() -> None:
    reader = Database.open(sys.argv[1], create=False).table("t")
    host = HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20, allocate=aligned)
    with PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(1 << 30), host_cache=host) as s:  # fill the tier
        for _ in s:
            pass
    for groups in (True, False):
        for keep in (True, False):
            stream.WARM_GROUPS, batch.KEEP_COPIES = groups, keep
            print(json.dumps({"groups": groups, "keep": keep, "scans": [scan(reader, host), scan(reader, host)],
                              "primed": scan(reader, host, prime=True), "stopped": scan(reader, host, stop_after=1),
                              "stopped_primed": scan(reader, host, stop_after=1, prime=True)}), flush=True)


if __name__ == "__main__":
    main()
