"""GPU decoders (decode.cu / decode.cuh) against the CPU encoder on random and adversarial inputs, and
compressed tables through the GPU page streamer and queries."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from codec_cases import ENCODED, bit_equal, cases

from hetdb.backend.gpu import gpu_available
from hetdb.codec.encodings import CONST, encode_as

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

os.environ.setdefault("HETDB_CHECK_LAUNCHES", "1")

CASES = cases()

# A tile of 128 x 3 = 384 values: tiles straddle the 1024-value blocks of the encoding.
_TILE_KERNEL = r"""
extern "C" __global__ void tile_decode_i64(const unsigned char* data, long long* out, long long n) {
  __shared__ long long smem[HETDB_DECODE_SMEM_I64];
  const int BT = 128, IPT = 3;
  for (long long start = (long long)blockIdx.x * BT * IPT; start < n; start += (long long)gridDim.x * BT * IPT) {
    long long left = n - start;
    int count = left < BT * IPT ? (int)left : BT * IPT;
    long long items[IPT];
    load_tile_encoded<BT, IPT>(data, start, items, count, smem);
    for (int k = 0; k < IPT; ++k) {
      int idx = k * BT + threadIdx.x;
      if (idx < count) out[start + idx] = items[k];
    }
  }
}
"""


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    os.environ["HETDB_KERNEL_CACHE"] = str(tmp_path_factory.mktemp("kernel-cache"))
    from hetdb.backend.gpu.compile import get_module

    get_module.cache_clear()


def _encoded(name: str, enc: str):
    values = CASES[name]
    try:
        return values, encode_as(values, enc)
    except ValueError:
        assert enc == CONST
        return values, None


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("enc", ENCODED)
def test_whole_page_decode_matches_cpu(kernel_cache, name: str, enc: str) -> None:
    import cupy

    from hetdb.backend.gpu.decode import decode_device

    values, buf = _encoded(name, enc)
    if buf is None:
        return
    out = decode_device(cupy.asarray(buf), enc, values.shape[0], values.dtype)
    assert bit_equal(cupy.asnumpy(out), values), f"{enc} on {name}"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("enc", ENCODED)
def test_tile_loader_matches_cpu(kernel_cache, name: str, enc: str) -> None:
    import cupy

    from hetdb.backend.gpu.codegen.runtime import compile_source
    from hetdb.backend.gpu.compile import launch, load_source

    values, buf = _encoded(name, enc)
    if buf is None:
        return
    fn = compile_source(load_source("decode.cuh") + _TILE_KERNEL, "tile_decode.cu").function("tile_decode_i64")
    n = values.shape[0]
    out = cupy.full(n, 0x5A5A, dtype=cupy.int64)
    launch(fn, 7, 128, (cupy.asarray(buf), out, np.int64(n)))
    expected = values.view(np.int64) if values.dtype == np.float64 else values.astype(np.int64)
    assert np.array_equal(cupy.asnumpy(out), expected), f"{enc} on {name}"


# 128 x 4 tiles of int32 values (the generated kernels' tiles and the rle loader's 32-bit value path).
_TILE_KERNEL_I32 = r"""
extern "C" __global__ void tile_decode_i32(const unsigned char* data, int* out, long long n) {
  __shared__ long long smem[HETDB_DECODE_SMEM_I64];
  const int BT = 128, IPT = 4;
  for (long long start = (long long)blockIdx.x * BT * IPT; start < n; start += (long long)gridDim.x * BT * IPT) {
    long long left = n - start;
    int count = left < BT * IPT ? (int)left : BT * IPT;
    int items[IPT];
    load_tile_encoded<BT, IPT>(data, start, items, count, smem);
    for (int k = 0; k < IPT; ++k) {
      int idx = k * BT + threadIdx.x;
      if (idx < count) out[start + idx] = items[k];
    }
  }
}
"""


@pytest.mark.parametrize("shape", ["ssb_orderdate", "long_runs_then_short"])
def test_rle_tiles_of_a_full_size_page(kernel_cache, shape: str) -> None:
    """Pages of 2^20 rows as hetdb writes them: hundreds of run blocks (the run block search's window
    of 32 around its guess, and its fallback where runs are skewed), tiles of 384 values (straddling
    run blocks), 512 (int32) and the whole-page decode's 1024, against the values encoded."""
    import cupy

    from hetdb.backend.gpu.codegen.runtime import compile_source
    from hetdb.backend.gpu.compile import launch, load_source
    from hetdb.backend.gpu.decode import decode_device

    rng = np.random.default_rng(14)
    n = 1 << 20
    if shape == "ssb_orderdate":
        lengths = rng.integers(1, 8, n // 3)
    else:  # a quarter of the rows in 40 long runs, then runs of 1 or 2 rows
        lengths = np.concatenate([np.full(40, n // 160), rng.integers(1, 3, n)])
    values = np.repeat((19920101 + rng.integers(0, 2406, lengths.shape[0])).astype(np.int32), lengths)[:n]
    buf = cupy.asarray(encode_as(values, "rle"))
    whole = decode_device(buf, "rle", n, values.dtype)
    assert np.array_equal(cupy.asnumpy(whole), values)
    source = load_source("decode.cuh") + _TILE_KERNEL + _TILE_KERNEL_I32
    module = compile_source(source, "tile_decode_rle.cu")
    out64 = cupy.full(n, 0x5A5A, dtype=cupy.int64)
    launch(module.function("tile_decode_i64"), 264, 128, (buf, out64, np.int64(n)))
    assert np.array_equal(cupy.asnumpy(out64), values.astype(np.int64))
    out32 = cupy.full(n, 0x5A5A, dtype=cupy.int32)
    launch(module.function("tile_decode_i32"), 264, 128, (buf, out32, np.int64(n)))
    assert np.array_equal(cupy.asnumpy(out32), values)


def test_empty_page_decodes_to_nothing(kernel_cache) -> None:
    import cupy

    from hetdb.backend.gpu.decode import decode_device

    assert decode_device(cupy.zeros(16, cupy.uint8), "for", 0, np.int32).shape == (0,)


def test_compressed_and_plain_tables_answer_alike_on_the_gpu(tmp_path, kernel_cache) -> None:
    import hetdb
    from hetdb.storage import Database
    from hetdb.storage.ingest import import_files

    rng = np.random.default_rng(5)
    n = 20_000
    t = pa.table({"k": pa.array(np.arange(n, dtype=np.int64)),
                  "g": pa.array(rng.integers(0, 7, n).astype(np.int32)),
                  "q": pa.array(rng.integers(1, 51, n).astype(np.int32), mask=rng.random(n) < 0.1),
                  "d": pa.array(np.repeat(rng.integers(0, 1 << 40, 20), n // 20)),
                  "f": pa.array(rng.normal(size=n))})
    import pyarrow.parquet as pq

    pq.write_table(t, str(tmp_path / "t.parquet"))
    results = []
    for compression in ("auto", "none"):
        path = str(tmp_path / compression)
        import_files(Database.open(path, create=True), "t", [str(tmp_path / "t.parquet")],
                     rows_per_page=3000, compression=compression)
        con = hetdb.connect(path, device="gpu")
        res = con.sql("select g, count(*) as c, sum(q) as sq, sum(k) as sk, min(d) as lo, max(d) as hi, "
                      "sum(f) as sf from t where k % 3 <> 1 group by g order by g").arrow()
        results.append(res)
    assert results[0].num_rows == 7
    assert results[0].drop_columns(["sf"]).equals(results[1].drop_columns(["sf"]))
    assert np.allclose(results[0]["sf"].to_numpy(), results[1]["sf"].to_numpy(), rtol=1e-9)
