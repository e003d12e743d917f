"""Who holds device memory after a GPU scan stopped early (test_gpu_stream_batch's early-stop test):
one step of a PageStreamer, ``close()``, then — with the streamer and its iterator still referenced —
the CuPy pool's bytes in use over the baseline, and for each live device array or memory pointer
that was not there before, its referrers up to a few levels (type, and which attribute / key / list
holds it). Then the same after dropping the iterator, and after dropping the streamer.

    python3 scripts/gpu_stream_leak_probe.py [batched|paged|row-group ...]
"""

from __future__ import annotations

import gc
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "backend"))


def describe(obj, holder) -> str:
    """How ``holder`` refers to ``obj``: the attribute or key or index, with the holder's type."""
    kind = type(holder).__name__
    if isinstance(holder, dict):
        for k, v in holder.items():
            if v is obj:
                return f"dict[{k!r}]"
        return "dict(value?)"
    if isinstance(holder, (list, tuple)):
        for i, v in enumerate(holder):
            if v is obj:
                return f"{kind}[{i}] (len {len(holder)})"
    if kind == "frame":
        return f"frame {holder.f_code.co_qualname}:{holder.f_lineno}"
    if kind == "cell":
        return "cell"
    for cls in type(holder).__mro__:  # slots only: a property could compute (decode) on access
        for name in getattr(cls, "__slots__", ()):
            try:
                if object.__getattribute__(holder, name) is obj:
                    return f"{kind}.{name}"
            except Exception:  # noqa: BLE001
                pass
    d = getattr(holder, "__dict__", None)
    if isinstance(d, dict):
        for k, v in d.items():
            if v is obj:
                return f"{kind}.{k}"
    return kind


def chains(obj, depth: int, seen: set, skip: set, indent: str = "    ") -> None:
    if depth == 0:
        return
    refs = gc.get_referrers(obj)
    skip.add(id(refs))  # (this list refers to every referrer: not one of the holders)
    for ref in refs:
        if id(ref) in skip or id(ref) in seen:
            continue
        if type(ref).__name__ == "frame" and ref.f_code.co_name in ("chains", "live", "main", "probe"):
            continue
        seen.add(id(ref))
        print(f"{indent}<- {describe(obj, ref)}")
        if isinstance(ref, dict) and "__name__" in ref and "__loader__" in ref:
            continue  # a module's globals
        chains(ref, depth - 1, seen, skip, indent + "  ")


def live(before: set) -> list:
    import cupy

    return [o for o in gc.get_objects()
            if isinstance(o, (cupy.ndarray, cupy.cuda.memory.MemoryPointer)) and id(o) not in before]


def probe(mode: str, reader) -> None:
    import cupy
    import test_gpu_stream_batch as t

    from hetdb.backend.gpu.stream import PageStreamer

    pool = cupy.get_default_memory_pool()
    host, b = t.tier(), t.budget()
    cupy.cuda.Device().synchronize()
    gc.collect()
    used = pool.used_bytes()
    before = {id(o) for o in live(set())}
    batch_bytes = 0 if mode == "row-group" else t.per_group(reader, t.COLUMNS, 2)
    s = PageStreamer(reader, t.COLUMNS, budget=b, host_cache=host, batch_bytes=batch_bytes, depth=2,
                     row_groups=[1, 2, 3, 4], compressed=mode == "paged")
    it = s.batches()
    rgs, batch = next(it)
    print(f"== {mode}: first step row groups {rgs}, {batch.num_rows} rows")
    del batch
    s.close()
    gc.collect()
    cupy.cuda.Device().synchronize()
    print(f"   after close (streamer and iterator alive): {pool.used_bytes() - used} bytes over the baseline")
    objs = sorted(live(before), key=lambda o: -getattr(o, "nbytes", getattr(getattr(o, "mem", None), "size", 0)))
    skip = {id(objs)}
    if not objs:
        print("   no device array or memory pointer alive that was not there before (a holder outside Python?)")
    top = objs[:4]
    skip.add(id(top))
    for o in top:
        size = getattr(o, "nbytes", None)
        print(f"   live {type(o).__name__} {getattr(o, 'shape', '')} {getattr(o, 'dtype', '')} {size} bytes")
        chains(o, 5, set(), skip)
        del o
    del objs, top
    del it
    gc.collect()
    print(f"   after del it: {pool.used_bytes() - used} bytes")
    del s
    gc.collect()
    print(f"   after del s: {pool.used_bytes() - used} bytes")


class _Tmp:
    def mktemp(self, name):
        return Path(tempfile.mkdtemp(prefix=name))


def main() -> None:
    import test_gpu_stream_batch as t

    from hetdb.storage import Database

    reader = Database.open(t.db_path.__wrapped__(_Tmp()), create=False).table("t")
    for mode in sys.argv[1:] or ["batched", "row-group", "paged"]:
        probe(mode, reader)


if __name__ == "__main__":
    main()
