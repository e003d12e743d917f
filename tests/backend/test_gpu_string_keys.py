"""backend/gpu/string_keys.py on the GPU: the device's string key ids (many threads claiming slots at
once, equal strings racing in one launch) against a Python dict, and StringKeyEncoder's GPU path
(dictionary map and plain strings on the device, no host step)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

os.environ.setdefault("HETDB_CHECK_LAUNCHES", "1")


def _column(strings: list[str]):
    import cupy

    data = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return cupy.asarray(offsets), cupy.asarray(np.frombuffer(b"".join(data) or b"\0", np.uint8))


def _reference(index: dict[str, int], strings: list[str], add: bool) -> list[int]:
    out = []
    for s in strings:
        if add and s not in index:
            index[s] = len(index)
        out.append(index.get(s, -1))
    return out


def test_device_ids_under_contention() -> None:
    """Which of several equal new strings in one launch claims the slot is a race, so the ids of a
    batch's new strings follow the claiming rows: checked as a bijection onto 0..count-1 that agrees
    with every earlier batch, not as first-seen order (the first, duplicate-free dictionary is exact)."""
    from hetdb.backend.gpu.string_keys import device_string_ids

    rng = random.Random(3)
    ids = device_string_ids()
    index: dict[str, int] = {}
    first = [f"k{i}" for i in range(5000)] + ["", "a\0", "é"]
    got, new = ids.map(*_column(first), add=True)
    assert got.get().tolist() == _reference(index, first, True) and new == len(first)
    compared = len(first)
    for size in (1, 1000, 200_000):  # many equal strings in one launch race for one slot
        batch = [rng.choice(first) if rng.random() < 0.3 else f"n{rng.randrange(size // 10 + 1)}x" * rng.randrange(1, 5)
                 for _ in range(size)]
        before = ids.count
        got, new = ids.map(*_column(batch), add=True)
        for s, i in zip(batch, got.get().tolist()):
            assert index.setdefault(s, i) == i, (size, s)  # one id per string, earlier ids kept
        assert len(index) == ids.count == before + new and sorted(index.values()) == list(range(ids.count))
        compared += size
    probe = [rng.choice(list(index)) for _ in range(10_000)] + ["missing", "k5000", "a"]
    got, new = ids.map(*_column(probe), add=False)
    assert new == 0 and got.get().tolist() == _reference(index, probe, False)
    stored_off = ids._offsets[:ids.count + 1].get()
    chars = ids._chars.get()
    by_id = {i: s for s, i in index.items()}
    assert all(bytes(chars[stored_off[i]:stored_off[i + 1]]).decode() == by_id[i] for i in range(ids.count))
    assert compared > 200_000


def test_encoder_on_the_gpu_takes_no_host_step() -> None:
    import cupy

    from hetdb import types as T
    from hetdb.backend.gpu import GpuBackend
    from hetdb.column import Column
    from hetdb.exec.keys import StringKeyEncoder

    be = GpuBackend()
    enc = StringKeyEncoder(be)
    off, chars = _column(["x", "y", "z"])
    build = Column(T.STRING, data=cupy.asarray(np.array([2, 0, 1], np.int32)),
                   dictionary=Column(T.STRING, offsets=off, chars=chars))
    assert enc.encode(build).get().tolist() == [2, 0, 1]
    off, chars = _column(["z", "q", "x"])
    probe = Column(T.STRING, data=cupy.asarray(np.array([0, 1, 2, 2], np.int32)),
                   dictionary=Column(T.STRING, offsets=off, chars=chars))
    assert enc.encode(probe, add=False).get().tolist() == [2, -1, 0, 0]
    off, chars = _column(["y", "q", ""])
    assert enc.encode(Column(T.STRING, offsets=off, chars=chars), add=False).get().tolist() == [1, -1, -1]
    assert enc.values == []  # nothing went through the host's dict
