"""hetdb.io: aligned O_DIRECT reads with buffered fallback, and concurrent page reads."""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

import numpy as np
import pytest

from hetdb.errors import CorruptDataError
from hetdb.io import ALIGN, aligned_empty, read_pages, read_range


@dataclass(frozen=True)
class Loc:
    path: str
    offset: int
    padded_length: int


@pytest.fixture
def data_file(tmp_path) -> tuple[str, bytes]:
    data = np.random.default_rng(0).integers(0, 256, 40 * ALIGN, dtype=np.uint8).tobytes()
    path = str(tmp_path / "pages.bin")
    with open(path, "wb") as f:
        f.write(data)
    return path, data


def test_aligned_empty_is_aligned() -> None:
    assert aligned_empty(0).shape == (0,)
    for n in (1, ALIGN, 3 * ALIGN + 5):
        a = aligned_empty(n)
        assert a.shape == (n,) and a.dtype == np.uint8 and a.ctypes.data % ALIGN == 0


def test_read_range_aligned_and_unaligned(data_file) -> None:
    path, data = data_file
    got = read_range(path, 4 * ALIGN, 3 * ALIGN)
    assert got.tobytes() == data[4 * ALIGN:7 * ALIGN]
    # unaligned ranges cannot use O_DIRECT and take the buffered path
    got = read_range(path, 123, 4567)
    assert got.tobytes() == data[123:123 + 4567]


def test_read_range_into_supplied_buffers(data_file) -> None:
    path, data = data_file
    out = aligned_empty(2 * ALIGN)
    got = read_range(path, ALIGN, 2 * ALIGN, out=out)
    assert np.shares_memory(got, out) and got.tobytes() == data[ALIGN:3 * ALIGN]
    # an mmap-backed buffer (page aligned) and an unaligned bytearray both work
    calls = []

    def alloc(n: int):
        calls.append(n)
        return mmap.mmap(-1, n)

    got = read_range(path, 0, ALIGN, alloc=alloc)
    assert calls == [ALIGN] and got.tobytes() == data[:ALIGN]
    got = read_range(path, 0, ALIGN, alloc=lambda n: bytearray(n + 1))
    assert got.tobytes() == data[:ALIGN]


def test_truncated_file_is_reported(data_file) -> None:
    path, _ = data_file
    with pytest.raises(CorruptDataError, match="truncated") as e:
        read_range(path, 39 * ALIGN, 2 * ALIGN)
    assert path in str(e.value)


def test_tmpfs_falls_back_to_buffered_reads() -> None:
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable tmpfs at /dev/shm")
    path = f"/dev/shm/hetdb-io-test-{os.getpid()}"
    data = bytes(range(256)) * 32
    try:
        with open(path, "wb") as f:
            f.write(data)
        assert read_range(path, ALIGN, ALIGN).tobytes() == data[ALIGN:2 * ALIGN]
    finally:
        os.unlink(path)


@pytest.mark.parametrize("workers", [1, 4])
def test_read_pages_in_order(data_file, workers: int) -> None:
    path, data = data_file
    rng = np.random.default_rng(1)
    locs = [Loc(path, int(k) * ALIGN, int(m) * ALIGN)
            for k, m in zip(rng.integers(0, 30, 25), rng.integers(1, 10, 25))]
    got = read_pages(locs, max_workers=workers)
    assert len(got) == 25
    for loc, arr in zip(locs, got):
        assert arr.tobytes() == data[loc.offset:loc.offset + loc.padded_length]
    sizes = []
    got = read_pages(locs[:3], max_workers=workers, alloc=lambda n: sizes.append(n) or aligned_empty(n))
    assert sizes and sorted(sizes) == sorted(loc.padded_length for loc in locs[:3])
    assert read_pages([], max_workers=workers) == []


def test_read_pages_reports_failure(data_file) -> None:
    path, _ = data_file
    locs = [Loc(path, 0, ALIGN), Loc(path + ".missing", 0, ALIGN), Loc(path, 38 * ALIGN, 4 * ALIGN)]
    with pytest.raises((FileNotFoundError, CorruptDataError)):
        read_pages(locs, max_workers=3)
