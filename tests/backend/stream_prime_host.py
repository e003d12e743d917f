"""Run in a fresh interpreter by test_stream_prime_host_run.py: a primed PageStreamer (exec/early_scan.py's
warm path: pages in the pinned host tier, batched deliveries) with ``scripts/host_only_cupy.py`` standing
in for CuPy. Prints one JSON line per case: the deliveries queued after ``prime`` and after each
``prime_more``, then the row groups of each delivery the consumer takes and whether their values are the
pages' (plain pages: the stand-in's copies are byte copies).

    python tests/backend/stream_prime_host.py DB
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import host_only_cupy  # noqa: E402

host_only_cupy.install()
import numpy as np  # noqa: E402

from hetdb.backend.gpu import stream_batch  # noqa: E402
from hetdb.backend.gpu.memory import DeviceMemoryBudget  # noqa: E402
from hetdb.backend.gpu.stream import PageStreamer  # noqa: E402
from hetdb.cache.host_cache import HostPageCache  # noqa: E402
from hetdb.cache.router import PageRouter  # noqa: E402
from hetdb.storage import Database  # noqa: E402

COLUMNS = ["a", "b", "c"]
# the test's deliveries are of eight row groups with three halvings at the end (the default halves more
# often than eight row groups have room for)
stream_batch.TAIL_RAMP = 3


def aligned(n: int) -> np.ndarray:
    raw = np.empty(n + 4096, dtype=np.uint8)
    start = (-raw.ctypes.data) % 4096
    return raw[start:start + n]


def run(reader, host, first: int, more: list[int], tail: bool = True) -> dict:
    per_group = sum(reader.page_location(c, 0).length for c in COLUMNS)
    budget = DeviceMemoryBudget(1 << 30)
    s = PageStreamer(reader, COLUMNS, budget=budget, host_cache=host, router=PageRouter("copy", gpu=True),
                     batch_bytes=per_group, overlap=True)
    queued = []
    it = s.prime(first, tail=tail)
    queued.append(s.routes.deliveries)
    for nbytes in more:
        # (-1: one delivery more, as exec/early_scan._prime_next asks for it)
        s.prime_more(nbytes if nbytes >= 0 else s.held_bytes + s.delivery_bytes)
        queued.append(s.routes.deliveries)
    got, exact = [], True
    for rgs, parts in it:
        got.append(list(rgs))
        s.prime_more(1 << 40)  # (the consumer took one: nothing more is primed, deliveries go as usual)
        for c in COLUMNS:
            want = np.concatenate([np.asarray(reader.read(c, rg).data) for rg in rgs])
            have = np.concatenate([np.asarray(p.columns[c].data) for p in parts])
            exact &= bool(np.array_equal(want, have))
    s.close()
    return {"queued": queued, "deliveries": got, "exact": exact, "budget_used": budget.used_bytes,
            "host_pinned": host.pinned_bytes(), "total": s.routes.deliveries}


def main() -> None:
    reader = Database.open(sys.argv[1], create=False).table("t")
    host = HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20, allocate=aligned)
    with PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(1 << 30), host_cache=host) as s:  # fill the tier
        for _ in s:
            pass
    for first, more in ((1, [1 << 40, 1 << 40]), (1 << 40, []), (1, [])):
        print(json.dumps(run(reader, host, first, more)), flush=True)
    print(json.dumps(run(reader, host, 1 << 40, [], tail=False)), flush=True)  # (a dimension scan's)
    print(json.dumps(run(reader, host, 1, [-1, 1 << 40])), flush=True)  # (the first two, then the rest)


if __name__ == "__main__":
    main()
