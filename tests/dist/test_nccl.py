"""The NCCL exchange: frames round-trip on the host (runs everywhere); the grouped all-to-all between
two GPU workers on Ray (gpu-marked, skipped with fewer than two GPUs)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hetdb.dist.nccl import frame, unframe
from hetdb.dist.shuffle_codec import decode_arrays, decode_batch, encode_batch


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = 5000
    return pa.table({"k": pa.array(np.sort(rng.integers(0, 10 ** 6, n)), pa.int64()),
                     "s": pa.array([f"s{i % 9}" for i in range(n)]),
                     "d": pa.array(rng.integers(0, 10 ** 6, n).astype(np.int32)).cast(pa.decimal128(12, 2))})


def test_frame_round_trip_on_host() -> None:
    batch = encode_batch(_table(1))
    buf = frame(batch)
    assert buf.dtype == np.uint8 and buf.shape[0] % 8 == 0
    layout, payload = unframe(buf)
    layout.payload = payload
    assert decode_batch(layout).equals(_table(1))
    # the host-prefix form the device path uses: the layout read from a copy of the first bytes
    layout2, payload2 = unframe(buf, buf[:64 + len(buf) // 2])
    assert np.array_equal(payload2, batch.payload)
    for got, want in zip(decode_arrays(layout2, payload=payload2), decode_arrays(batch)):
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want if k != "dictionary")


def _gpus() -> int:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no CuPy or no driver: no GPU
        return 0


@pytest.mark.gpu
@pytest.mark.skipif(_gpus() < 2, reason="needs two GPUs")
def test_nccl_all_to_all_between_two_gpu_workers() -> None:
    import ray

    from hetdb.dist import nccl

    @ray.remote(num_gpus=1)
    class Peer:
        def uid(self):
            return nccl.unique_id()

        def run(self, rank: int, uid) -> list:
            import cupy

            ex = nccl.NcclExchange(2, rank, uid)
            got = ex.exchange_batches([encode_batch(_table(10 * rank + p)) for p in range(2)])
            out = []
            for layout, payload in got:
                cols = decode_arrays(layout, payload=payload, decode_fn=__import__(
                    "hetdb.backend.gpu.decode", fromlist=["decode_device"]).decode_device)
                out.append(cupy.asnumpy(cols[0]["values"]).tolist())
            ex.close()
            return out

    ray.init(num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        peers = [Peer.remote() for _ in range(2)]
        uid = ray.get(peers[0].uid.remote())
        results = ray.get([p.run.remote(r, uid) for r, p in enumerate(peers)])
    finally:
        ray.shutdown()
    for rank in range(2):
        for sender in range(2):
            want = _table(10 * sender + rank).column("k").to_pylist()
            assert results[rank][sender] == want
