"""backend/gpu/copies.py without a GPU: a delivery's copies queued through a stand-in CuPy whose
memcpyAsync copies host memory at once (ctypes.memmove), one stream and spread over several (large
copies cut in pieces), land every byte where it belongs; the helper streams start after the copy
stream's earlier work and the copy stream waits for them."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

from hetdb.backend.gpu import copies


class _Event:
    def __init__(self, log, disable_timing=False) -> None:
        self.log = log
        self.stream = None

    def record(self, stream) -> None:
        self.stream = stream
        self.log.append(("record", stream.name))


class _Stream:
    made = 0

    def __init__(self, log, name=None) -> None:
        _Stream.made += 1
        self.log = log
        self.name = name or f"helper{_Stream.made}"
        self.ptr = 1000 + _Stream.made

    def wait_event(self, event) -> None:
        self.log.append(("wait", self.name, event.stream.name))


def _fake_cupy(log: list) -> types.ModuleType:
    streams: dict[int, str] = {}

    def memcpy(dst, src, n, kind, stream_ptr):
        assert kind == 1
        log.append(("copy", streams.get(stream_ptr, "?"), n))
        ctypes.memmove(dst, src, n)

    def make_stream(non_blocking=True):
        s = _Stream(log)
        streams[s.ptr] = s.name
        return s

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(memcpyAsync=memcpy),
        Event=lambda disable_timing=False: _Event(log, disable_timing),
        Stream=make_stream,
        Device=lambda *a: types.SimpleNamespace(id=0))
    fake._streams = streams
    return fake


@pytest.fixture
def fake(monkeypatch):
    log: list = []
    cupy = _fake_cupy(log)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(copies, "_helpers", {})
    primary = _Stream(log, "copy")
    cupy._streams[primary.ptr] = "copy"
    return log, primary


def _case(seed: int = 0):
    rng = np.random.default_rng(seed)
    host = rng.integers(0, 256, 4 << 20, dtype=np.uint8)
    # (source offset, buffer offset, bytes): small, mid and one large copy, not in address order
    spec = [(0, 0, 5000), (2 << 20, 8192, (1 << 20) + 123), (12288, (2 << 20), 300_000), (5000, 7000, 17)]
    expected = np.zeros(4 << 20, np.uint8)
    for s, d, n in spec:
        expected[d:d + n] = host[s:s + n]
    return host, spec, expected


@pytest.mark.parametrize("streams,split", [(1, 0), (2, 0), (2, 256 << 10), (3, 100_000)])
def test_copies_land_where_they_belong(fake, monkeypatch, streams, split):
    log, primary = fake
    monkeypatch.setattr(copies, "COPY_STREAMS", streams)
    monkeypatch.setattr(copies, "SPLIT_BYTES", split)
    monkeypatch.setattr(copies, "BATCH_CALL", False)
    host, spec, expected = _case()
    buf = np.zeros(4 << 20, np.uint8)
    copies.queue_copies([(host.ctypes.data + s, d, n) for s, d, n in spec], buf.ctypes.data, primary)
    assert np.array_equal(buf, expected)
    done = [e for e in log if e[0] == "copy"]
    assert sum(e[2] for e in done) == sum(n for _, _, n in spec)
    used = {e[1] for e in done}
    if streams == 1:
        assert used == {"copy"} and len(done) == len(spec)
        return
    assert len(used) == streams  # every stream took a share
    if split:
        assert len(done) > len(spec)  # the copies over SPLIT_BYTES were cut
    helpers = used - {"copy"}
    # each helper waits for the copy stream before its first copy; the copy stream waits for each after its last
    for h in helpers:
        first_copy = next(i for i, e in enumerate(log) if e[:2] == ("copy", h))
        waited = next(i for i, e in enumerate(log) if e == ("wait", h, "copy"))
        assert waited < first_copy
        last_copy = max(i for i, e in enumerate(log) if e[:2] == ("copy", h))
        joined = next(i for i, e in enumerate(log) if e == ("wait", "copy", h))
        assert joined > last_copy


def test_pieces_cover_each_copy_in_order(monkeypatch):
    monkeypatch.setattr(copies, "SPLIT_BYTES", 1 << 20)
    got = copies._pieces([(100, 0, 10), (1 << 30, 4096, (5 << 20) + 7)], 3)
    assert got[0] == (100, 0, 10)
    rest = got[1:]
    assert len(rest) == 3
    assert rest[0][0] == 1 << 30 and rest[0][1] == 4096
    for (s0, d0, n0), (s1, d1, _) in zip(rest, rest[1:]):
        assert s1 == s0 + n0 and d1 == d0 + n0 and n0 % 4096 == 0
    assert sum(n for _, _, n in rest) == (5 << 20) + 7
    assert copies._pieces([(1, 2, 3 << 20)], 1) == [(1, 2, 3 << 20)]


def test_helper_streams_are_made_once_per_copy_stream(fake):
    _, primary = fake
    a = copies._helper_streams(primary, 2)
    b = copies._helper_streams(primary, 1)
    assert len(a) == 2 and b == a[:1]
