"""Small host->device uploads made by a kernel (backend/gpu/upload.py) carry the bytes exactly, alone and
while a long queue of host->device copies is pending on another stream; larger uploads and the
switched-off path are copies; "auto" takes the kernel only while noted copies are in flight. Timings are
not asserted (scripts/copy_queue_probe.py measures them)."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

RNG = np.random.default_rng(7)


def _arrays() -> list[np.ndarray]:
    return [RNG.integers(-2**31, 2**31 - 1, 1023, dtype=np.int32), RNG.integers(-2**62, 2**62, 5, dtype=np.int64),
            np.zeros(0, dtype=np.int32), RNG.random(7) < 0.5, RNG.random(3), np.arange(3, dtype=np.int8)]


@pytest.fixture(autouse=True)
def by_kernel(monkeypatch):
    """Uploads by the kernel whether or not a scan's copies are in flight (mode "on")."""
    from hetdb.backend.gpu import upload

    monkeypatch.setattr(upload, "mode", "on")


@pytest.mark.parametrize("mode", ["on", "off", "auto"])
def test_to_device_carries_every_array(monkeypatch, mode) -> None:
    import cupy

    from hetdb.backend.gpu import upload

    monkeypatch.setattr(upload, "mode", mode)
    arrays = _arrays()
    got = upload.to_device(arrays)
    cupy.cuda.get_current_stream().synchronize()
    assert len(got) == len(arrays)
    for a, d in zip(arrays, got):
        assert d.dtype == a.dtype and d.shape == a.shape
        np.testing.assert_array_equal(cupy.asnumpy(d), a)


@pytest.mark.parametrize("words", [1, 2, 3, 255, 256, 257, 513, 600_001])
def test_the_kernel_moves_every_word_odd_counts_and_grid_strides_included(words) -> None:
    import cupy

    from hetdb.backend.gpu import upload

    a = RNG.integers(-2**63, 2**63 - 1, words, dtype=np.int64)
    (d,) = upload.to_device([a])
    np.testing.assert_array_equal(cupy.asnumpy(d), a)


def test_an_upload_larger_than_the_kernel_takes_is_a_copy(monkeypatch) -> None:
    import cupy

    from hetdb.backend.gpu import upload

    monkeypatch.setattr(upload, "UPLOAD_MAX", 64)
    a = RNG.integers(0, 1000, 1000, dtype=np.int64)
    (d,) = upload.to_device([a])
    np.testing.assert_array_equal(cupy.asnumpy(d), a)


def test_uploads_behind_a_queue_of_copies_on_another_stream() -> None:
    """The upload kernel's bytes are right while 256 MiB of copies are still queued on another stream,
    and its pinned staging is held until the kernel has read it (made again at once, changed)."""
    import cupy

    from hetdb.backend.gpu import upload
    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    n = 256 << 20
    host = pinned_empty(n, np.uint8)
    host[:] = 3
    dev = cupy.empty(n, dtype=cupy.uint8)
    other = new_stream()
    for off in range(0, n, 16 << 20):
        cupy.cuda.runtime.memcpyAsync(dev.data.ptr + off, host.ctypes.data + off, 16 << 20, 1, other.ptr)
    outs, want = [], []
    for k in range(20):
        a = np.full(4096 + k, k, dtype=np.int32)
        outs.append(upload.to_device([a])[0])
        want.append(a)
    cupy.cuda.get_current_stream().synchronize()
    for d, a in zip(outs, want):
        np.testing.assert_array_equal(cupy.asnumpy(d), a)
    other.synchronize()
    assert int(dev[-1]) == 3


def test_auto_uploads_by_the_kernel_only_while_noted_copies_are_in_flight(monkeypatch) -> None:
    import cupy

    from hetdb.backend.gpu import upload
    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    monkeypatch.setattr(upload, "mode", "auto")
    monkeypatch.setattr(upload, "_queued", None)
    assert not upload.by_kernel(1024)  # (no scan's copies noted)
    n = 256 << 20
    host = pinned_empty(n, np.uint8)
    dev = cupy.empty(n, dtype=cupy.uint8)
    s = new_stream()
    cupy.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, n, 1, s.ptr)
    done = cupy.cuda.Event(disable_timing=True)
    done.record(s)
    upload.note_copies(done)
    busy = upload.by_kernel(1024)  # (256 MiB take ~5 ms: still in flight, as a rule)
    assert not upload.by_kernel(upload.UPLOAD_MAX + 1)
    a = np.arange(100, dtype=np.int32)
    np.testing.assert_array_equal(cupy.asnumpy(upload.to_device([a])[0]), a)
    done.synchronize()
    assert not upload.by_kernel(1024)
    print("by kernel while copies were in flight:", busy)


def test_upload_pinned_and_the_backends_asarray() -> None:
    import cupy

    from hetdb.backend.gpu import GpuBackend, upload
    from hetdb.backend.gpu.memory import pinned_empty

    staged = pinned_empty(10, np.int64)
    staged[...] = np.arange(10) * 7
    d = upload.upload_pinned(staged).view(np.int64)
    np.testing.assert_array_equal(cupy.asnumpy(d), np.arange(10) * 7)
    be = GpuBackend()
    m = RNG.integers(0, 100, (3, 5)).astype(np.int16)
    got = be.asarray(m)
    assert got.shape == (3, 5) and got.dtype == np.int16
    np.testing.assert_array_equal(cupy.asnumpy(got), m)
    np.testing.assert_array_equal(cupy.asnumpy(be.asarray(np.array([True, False, True]))), [True, False, True])
    assert be.asarray(np.zeros(0, dtype=np.int32)).shape == (0,)
