"""backend/gpu/string_keys.py (the device's string key ids: StringKeyEncoder on the GPU) *run* without a
GPU: string_keys.cu is built as a host shared library with g++ (CUDA built-ins shimmed: one thread runs
every row of a grid-stride loop, atomics are plain read-modify-writes) and DeviceStringIds drives it
on NumPy arrays exactly as it drives the CUDA kernels on CuPy arrays. Checked against a Python dict:
equal strings get equal ids across dictionaries and plain batches, ids are dense and in first-seen
order, unseen strings give -1 without ``add``, the table grows (rehash) past its first slots, and
strings that differ only past 8 bytes, by a trailing NUL or by length collide in nothing."""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess

import numpy as np
import pytest

from hetdb.backend.gpu.compile import load_source
from hetdb.backend.gpu.string_keys import MIN_SLOTS, DeviceStringIds

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

SHIM = r"""
#include <cstring>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__
struct Dim3 { unsigned x; };
static Dim3 threadIdx = {0}, blockIdx = {0}, gridDim = {1}, blockDim = {1};
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  unsigned long long o = *p; if (o == c) *p = v; return o; }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline long long __double_as_longlong(double v) { long long d; std::memcpy(&d, &v, 8); return d; }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
"""

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    assert a.flags.c_contiguous
    return a.ctypes.data_as(_P)


class HostKernels:
    """StringKeyKernels over NumPy arrays: the kernels of string_keys.cu in a host library."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.calls: dict[str, int] = {}

    def _call(self, name: str, *args) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        getattr(self.lib, name)(*args)

    def hash(self, offsets, chars, n, out) -> None:
        self._call("strkey_hash", _ptr(offsets), _ptr(chars), _I(n), _ptr(out))

    def map(self, offsets, chars, hashes, n, store_offsets, store_chars, store_hashes, base, slots, add,
            out, claim_slot) -> None:
        self._call("strkey_map", _ptr(offsets), _ptr(chars), _ptr(hashes), _I(n), _ptr(store_offsets),
                   _ptr(store_chars), _ptr(store_hashes), _I(base), _ptr(slots), _I(slots.shape[0] - 1),
                   ctypes.c_int(int(add)), _ptr(out), _ptr(claim_slot))

    def renumber(self, ids, claim_slot, rank, n, base, slots) -> None:
        self._call("strkey_renumber", _ptr(ids), _ptr(claim_slot), _ptr(np.ascontiguousarray(rank)), _I(n),
                   _I(base), _ptr(slots))

    def reinsert(self, hashes, n, slots) -> None:
        self._call("strkey_reinsert", _ptr(np.ascontiguousarray(hashes)), _I(n), _ptr(slots),
                   _I(slots.shape[0] - 1))

    def gather_strings(self, offsets, chars, indices):
        begin, end = offsets[indices], offsets[indices + 1]
        out_off = np.zeros(len(indices) + 1, np.int64)
        np.cumsum(end - begin, out=out_off[1:])
        out = np.concatenate([chars[b:e] for b, e in zip(begin, end)]) if len(indices) else np.zeros(0, np.uint8)
        return out_off, out.astype(np.uint8)


def build_library(d) -> ctypes.CDLL:
    """string_keys.cu as a host shared library in directory ``d``."""
    src, so = d / "string_keys_host.cpp", d / "libstrkeys.so"
    src.write_text(SHIM + load_source("string_keys.cu"))
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-o", str(so), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    return ctypes.CDLL(str(so))


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> ctypes.CDLL:
    return build_library(tmp_path_factory.mktemp("string-keys-host"))


def _column(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    data = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(data), np.uint8).copy()


class Reference:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def map(self, strings: list[str], add: bool) -> list[int]:
        out = []
        for s in strings:
            if s not in self.index and add:
                self.index[s] = len(self.index)
            out.append(self.index.get(s, -1))
        return out


def _tricky(rng: random.Random, n: int) -> list[str]:
    """Strings that differ late, by a NUL, by length, in UTF-8, and the empty string."""
    base = ["", "a", "a\0", "a\0\0", "abcdefgh", "abcdefghi", "abcdefgh\0", "abcdefgi", "é", "e\u0301",
            "x" * 40, "x" * 39 + "y", "x" * 41]
    words = base + [f"w{rng.randrange(3 * n)}" * rng.randrange(1, 4) for _ in range(n)]
    rng.shuffle(words)
    return words


def test_ids_match_a_dictionary_across_batches(lib) -> None:
    rng = random.Random(7)
    kernels = HostKernels(lib)
    ids = DeviceStringIds(np, kernels)
    ref = Reference()
    # the first dictionary (distinct strings) maps to its own codes
    first = list(dict.fromkeys(_tricky(rng, 300)))
    got, new = ids.map(*_column(first), add=True)
    assert new == len(first) and got.tolist() == list(range(len(first)))
    assert ref.map(first, True) == got.tolist()
    compared = len(first)
    # more batches with duplicates, seen and new strings, a plain batch larger than the first table
    for size in (50, 700, 3000, 1):
        batch = [rng.choice(first) if rng.random() < 0.4 else s for s in _tricky(rng, size)]
        before = ids.count
        got, new = ids.map(*_column(batch), add=True)
        expect = ref.map(batch, True)
        assert got.tolist() == expect, size
        assert new == ids.count - before and ids.count == len(ref.index)
        compared += len(batch)
    assert kernels.calls["strkey_reinsert"] >= 1 and ids.count * 2 > MIN_SLOTS  # the table grew
    # lookups without add: unseen strings are -1 and nothing is stored
    probe = _tricky(rng, 500) + ["never seen", "a\0\0\0", "abcdefgh\0\0"]
    before = ids.count
    got, new = ids.map(*_column(probe), add=False)
    assert new == 0 and ids.count == before
    assert got.tolist() == ref.map(probe, False) and -1 in got.tolist()
    compared += len(probe)
    # the store holds exactly the distinct strings, in id order
    stored_off = ids._offsets[:ids.count + 1]
    stored = [bytes(ids._chars[stored_off[i]:stored_off[i + 1]]).decode() for i in range(ids.count)]
    assert stored == list(ref.index)
    assert compared > 4000


def test_empty_inputs_and_lookup_before_any_add(lib) -> None:
    ids = DeviceStringIds(np, HostKernels(lib))
    got, new = ids.map(*_column(["a", "b"]), add=False)
    assert got.tolist() == [-1, -1] and new == 0
    got, new = ids.map(*_column([]), add=True)
    assert got.shape == (0,) and new == 0 and ids.count == 0
    got, new = ids.map(*_column(["", "", "b", ""]), add=True)  # only empty strings: a 1-byte chars dummy
    assert got.tolist() == [0, 0, 1, 0] and new == 2
    got, _ = ids.map(*_column([""]), add=False)
    assert got.tolist() == [0]


class _HostAsGpu:
    """The CPU backend's arrays under the GPU's name: StringKeyEncoder takes its device path."""

    name = "gpu"
    xp = np

    def gather(self, values, indices):
        return np.take(values, indices)


def test_encoder_device_path_maps_dictionaries_and_plain_strings(lib, monkeypatch) -> None:
    import hetdb.backend.gpu.string_keys as sk
    from hetdb import types as T
    from hetdb.column import Column
    from hetdb.exec.keys import StringKeyEncoder

    kernels = HostKernels(lib)
    monkeypatch.setattr(sk, "device_string_ids", lambda: DeviceStringIds(np, kernels))

    def dict_col(values: list[str], codes: list[int]) -> Column:
        off, chars = _column(values)
        return Column(T.STRING, data=np.array(codes, np.int32), dictionary=Column(T.STRING, offsets=off, chars=chars))

    build_dict = dict_col(["x", "y", "z"], [2, 0, 1, 1])
    enc = StringKeyEncoder(_HostAsGpu())
    # the first dictionary: its codes are the ids (no gather)
    assert enc.encode(build_dict).tolist() == [2, 0, 1, 1]
    assert enc.dictionary_ids(build_dict.dictionary) is None
    # a probe dictionary of another table: ids of the build's strings, -1 for the others
    probe = dict_col(["z", "w", "x", ""], [0, 1, 2, 3, 0])
    assert enc.encode(probe, add=False).tolist() == [2, -1, 0, -1, 2]
    calls = kernels.calls["strkey_map"]
    assert enc.encode(probe, add=False).tolist() == [2, -1, 0, -1, 2]
    assert kernels.calls["strkey_map"] == calls  # the map is kept per dictionary
    # plain strings added: "w" gets the next id, and the probe's kept map (made without add) is redone
    off, chars = _column(["w", "x", "w", "v"])
    assert enc.encode(Column(T.STRING, offsets=off, chars=chars)).tolist() == [3, 0, 3, 4]
    assert enc.encode(probe, add=False).tolist() == [2, 3, 0, -1, 2]
    assert kernels.calls["strkey_map"] == calls + 2
