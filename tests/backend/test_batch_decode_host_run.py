"""kernels/batch_decode.cu *run* without a GPU: the kernels compiled with g++ under the sequential CUDA
shim of pipeline_host.py (one thread at a time), over a delivery buffer laid out by
batch_plan.plan_delivery from real pages of several row groups: decode_pages on const/for/dict pages
of 1-, 4- and 8-byte values (FLOAT64 bit patterns, BOOLEAN bytes) next to plain pages, unpack_validity
on pages with and without NULLs, rebase_offsets on plain strings; the columns read back from the
buffer must equal the values written. Delta and rle pages decode cooperatively (shared memory across
threads, which the sequential shim cannot run): the gpu-marked test_gpu_stream_batch.py covers them."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from pipeline_host import SHIM

from hetdb import types as T
from hetdb.backend.gpu.batch_plan import ColumnSpecLite, PageSpec, plan_delivery
from hetdb.backend.gpu.compile import load_source
from hetdb.codec.encodings import encode_as
from hetdb.column import Column
from hetdb.storage.pages import encode_page, pack_validity

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

MAIN = r"""
#include <cstdlib>
static void run(void (*kernel)(unsigned char*, const i64*), unsigned char* base, long long start,
                unsigned pages, unsigned blocks) {
  gridDim.x = blocks; gridDim.y = pages; blockDim.x = 256;
  for (unsigned y = 0; y < pages; ++y)
    for (unsigned x = 0; x < blocks; ++x)
      for (unsigned t = 0; t < 256; ++t) {
        blockIdx.x = x; blockIdx.y = y; threadIdx.x = t;
        kernel(base, (const i64*)(base + 8 * start));
      }
}
int main(int argc, char** argv) {
  long long n = std::atoll(argv[3]);
  unsigned char* base = (unsigned char*)std::aligned_alloc(256, (n + 255) / 256 * 256);
  FILE* f = std::fopen(argv[1], "rb");
  if (std::fread(base, 1, n, f) != (size_t)n) return 2;
  std::fclose(f);
  for (int a = 4; a + 3 < argc; a += 4) {
    long long start = std::atoll(argv[a + 1]);
    unsigned pages = (unsigned)std::atoll(argv[a + 2]), blocks = (unsigned)std::atoll(argv[a + 3]);
    char k = argv[a][0];
    run(k == 'd' ? decode_pages : k == 'u' ? unpack_validity : rebase_offsets, base, start, pages, blocks);
  }
  f = std::fopen(argv[2], "wb");
  std::fwrite(base, 1, n, f);
  std::fclose(f);
  return 0;
}
"""


def _strings(values, validity):
    data = [v.encode() for v in values]
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in data])]).astype(np.int64)
    return Column(T.STRING, offsets=offsets, chars=np.frombuffer(b"".join(data), np.uint8).copy(),
                  validity=validity)


def _forced(col: Column, codec: str) -> tuple[np.ndarray, dict]:
    """A page whose data section is in ``codec`` (encode_page keeps the smallest), laid out as
    encode_page lays pages out: data at 0, validity 8-aligned after it."""
    data = encode_as(col.data, codec)
    sections = {"data": [0, int(data.shape[0])]}
    parts = [data]
    if col.validity is not None:
        bits = pack_validity(col.validity)
        off = -(-data.shape[0] // 8) * 8
        parts = [data, np.zeros(off - data.shape[0], np.uint8), bits]
        sections["validity"] = [off, int(bits.shape[0])]
    return np.concatenate(parts), sections


def test_batch_kernels_rebuild_columns_on_the_host(tmp_path):
    rng = np.random.default_rng(9)
    sizes = [1500, 1024, 3, 2100]
    lite = [ColumnSpecLite("i32", 4), ColumnSpecLite("i64", 8), ColumnSpecLite("k", 8), ColumnSpecLite("b", 1),
            ColumnSpecLite("f", 8), ColumnSpecLite("n", 4), ColumnSpecLite("s", 0, string=True)]
    codecs = {"i32": "for", "i64": "dict", "k": "const", "b": "for", "f": "dict", "n": "for"}
    raws = [[] for _ in lite]
    specs = [[] for _ in lite]
    want: dict[str, list] = {c.name: [] for c in lite}
    for r, n in enumerate(sizes):
        plain_page = r == 1  # one plain page per column among encoded ones
        cols = {
            "i32": Column(T.INT32, data=rng.integers(-1000, 1000, n).astype(np.int32)),
            "i64": Column(T.INT64, data=rng.choice(np.array([-(1 << 50), 3, 1 << 45], np.int64), n)),
            "k": Column(T.INT64, data=np.full(n, -(1 << 35) + r, np.int64)),
            "b": Column(T.BOOL, data=rng.random(n) < 0.5),
            "f": Column(T.FLOAT64, data=rng.choice(np.array([0.5, -2.25, 1e300]), n)),
            "n": Column(T.INT32, data=rng.integers(0, 50, n).astype(np.int32),
                        validity=None if r == 2 else rng.random(n) < 0.7),
            "s": _strings([f"s{r}-{i}" + "y" * (i % 4) for i in range(n)], rng.random(n) < 0.9 if r != 3 else None),
        }
        for c, spec in enumerate(lite):
            col = cols[spec.name]
            if plain_page or spec.string:
                raw, sections, length, data_codec, _ = encode_page(col, "plain", ())
                raw = raw[:length].copy()
            else:
                raw, sections = _forced(col, codecs[spec.name])
                data_codec, length = codecs[spec.name], raw.shape[0]
            raws[c].append(raw)
            specs[c].append(PageSpec(length, n, data_codec, sections, f"page {r}"))
            want[spec.name].append(col)
    plan = plan_delivery(lite, specs)
    buf = np.zeros(plan.nbytes, np.uint8)
    buf[:plan.desc.nbytes] = plan.desc.view(np.uint8)
    for ci, pi, off, n, dst in plan.copies:
        buf[dst:dst + n] = raws[ci][pi][off:off + n]
    (tmp_path / "in.bin").write_bytes(buf.tobytes())
    src = SHIM.replace("struct Dim3 { unsigned x; };", "struct Dim3 { unsigned x, y; };") + "#include <cstdlib>\n" \
        + load_source("batch_decode.cu") + MAIN
    (tmp_path / "k.cpp").write_text(src)
    exe = tmp_path / "k"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(tmp_path / "k.cpp")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    args = [str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), str(plan.nbytes)]
    for kind, launch in (("d", plan.decode), ("u", plan.unpack), ("r", plan.rebase)):
        assert launch is not None
        args += [kind, str(launch.start), str(launch.pages), "2"]  # 2 blocks per page: grid-stride
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.uint8)
    dtypes = {"i32": np.int32, "i64": np.int64, "k": np.int64, "b": np.bool_, "f": np.float64, "n": np.int32}
    compared = 0
    for spec, cp in zip(lite, plan.columns):
        validity = None if cp.validity is None else out[cp.validity[0]:cp.validity[0] + cp.validity[1]].view(bool)
        if spec.string:
            got = Column(T.STRING, offsets=out[cp.offsets[0]:cp.offsets[0] + cp.offsets[1]].view(np.int64),
                         chars=out[cp.chars[0]:cp.chars[0] + cp.chars[1]], validity=validity)
            expected = [v for col in want["s"] for v in col.to_arrow().to_pylist()]
            assert got.to_arrow().to_pylist() == expected
        else:
            data = out[cp.data[0]:cp.data[0] + cp.data[1]].view(dtypes[spec.name])
            np.testing.assert_array_equal(data, np.concatenate([c.data for c in want[spec.name]]), spec.name)
            if spec.name == "n":
                valid = np.concatenate([np.ones(len(c.data), bool) if c.validity is None else c.validity
                                        for c in want["n"]])
                np.testing.assert_array_equal(validity, valid)
        compared += plan.rows
    assert compared == sum(sizes) * len(lite)
