"""All-to-all of exchange batches between GPU workers over NCCL (CuPy's ``NcclCommunicator``, grouped
``send``/``recv``): the communicator of GPU workers' collective exchanges (``collective_exchange``).
Not run yet: no machine with two GPUs was available (the tests are gpu-marked and skip with fewer
than two GPUs; the same exchange code runs with the other communicators of ``collective``).

A batch travels as one **frame**: an 8-byte layout length, the pickled layout of its
``EncodedBatch`` (schema, per-column sections), padding to 8 bytes, then the payload (encoded on
the GPU by ``gpu_shuffle``). The receiver decodes each section where the frame landed with
``backend.gpu.decode.decode_device`` (the GPU twins of the CPU decoders, same byte layout).

Setup through Ray: the driver asks worker 0 for ``unique_id()`` and hands it to every worker, which
builds ``NcclExchange(workers, rank, uid)`` on its GPU (``Worker.join_group``)."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from hetdb.dist.shuffle_codec import EncodedBatch, decode_arrays
from hetdb.errors import HetdbError


def _nccl():
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError:
        raise HetdbError("NCCL exchanges need CuPy with NCCL: pip install 'hetdb[gpu]'") from None
    return cupy, nccl


def unique_id() -> tuple:
    """The NCCL id one worker makes and every worker of the communicator is given."""
    _, nccl = _nccl()
    return nccl.get_unique_id()


def frame_prefix(batch: EncodedBatch) -> np.ndarray:
    """The bytes of ``batch``'s frame before its payload: layout length, pickled layout, padding."""
    layout = np.frombuffer(pickle.dumps((batch.schema, batch.num_rows, batch.columns, batch.raw_bytes)), np.uint8)
    pad = -layout.shape[0] % 8
    return np.concatenate([np.array([layout.shape[0]], np.int64).view(np.uint8), layout, np.zeros(pad, np.uint8)])


def frame(batch: EncodedBatch) -> np.ndarray:
    """``batch`` (host payload) as one uint8 buffer: ``frame_prefix``, then the payload."""
    return np.concatenate([frame_prefix(batch), batch.payload])


def unframe(buf: Any, host_prefix: np.ndarray | None = None) -> tuple[EncodedBatch, Any]:
    """(the batch's layout with an empty host payload, the payload as a view of ``buf``). ``buf`` is
    a host or device uint8 array; for a device one pass ``host_prefix``, a host copy of at least its
    layout (the first bytes), so only the layout crosses back to the host."""
    head = buf if host_prefix is None else host_prefix
    size = int(np.asarray(head[:8]).view(np.int64)[0])
    schema, rows, columns, raw = pickle.loads(np.asarray(head[8:8 + size]).tobytes())
    start = 8 + size + (-size % 8)
    return EncodedBatch(schema, rows, columns, np.zeros(0, np.uint8), raw), buf[start:]


def decode_on_device(buf: Any, host_prefix: np.ndarray) -> list[dict]:
    """The device arrays of every column of the frame ``buf`` (a CuPy uint8 array)."""
    from hetdb.backend.gpu.decode import decode_device

    batch, payload = unframe(buf, host_prefix)
    return decode_arrays(batch, payload=payload, decode_fn=decode_device)


class NcclExchange:
    """Worker ``rank`` of an NCCL communicator of ``workers`` GPUs."""

    def __init__(self, workers: int, rank: int, uid: tuple):
        _, nccl = _nccl()
        self.workers, self.rank = workers, rank
        self.comm = nccl.NcclCommunicator(workers, uid, rank)

    def all_to_all(self, sends: list[Any]) -> list[Any]:
        """``sends[p]``: the device uint8 buffer for worker ``p`` (None: nothing); returns the buffer
        received from each worker (this worker's own one is ``sends[rank]``). Two grouped rounds on
        the current stream: the sizes, then the bytes (empty buffers are not sent)."""
        cupy, nccl = _nccl()
        n, me = self.workers, self.rank
        stream = cupy.cuda.get_current_stream().ptr
        out_sizes = np.array([0 if s is None else int(s.nbytes) for s in sends], np.int64)
        d_out = cupy.asarray(out_sizes)
        d_in = cupy.zeros(n, cupy.int64)
        nccl.groupStart()
        for p in range(n):
            if p != me:
                self.comm.send(d_out[p:p + 1].data.ptr, 1, nccl.NCCL_INT64, p, stream)
                self.comm.recv(d_in[p:p + 1].data.ptr, 1, nccl.NCCL_INT64, p, stream)
        nccl.groupEnd()
        in_sizes = cupy.asnumpy(d_in)
        recv = [sends[p] if p == me else cupy.empty(int(in_sizes[p]), cupy.uint8) for p in range(n)]
        nccl.groupStart()
        for p in range(n):
            if p == me:
                continue
            if out_sizes[p]:
                self.comm.send(sends[p].data.ptr, int(out_sizes[p]), nccl.NCCL_UINT8, p, stream)
            if in_sizes[p]:
                self.comm.recv(recv[p].data.ptr, int(in_sizes[p]), nccl.NCCL_UINT8, p, stream)
        nccl.groupEnd()
        cupy.cuda.get_current_stream().synchronize()
        return recv

    def exchange_batches(self, batches: list[EncodedBatch | None]) -> list[tuple[EncodedBatch, Any] | None]:
        """Encoded batches to every worker and back: (layout, device payload) per sender."""
        cupy, _ = _nccl()
        frames = [None if b is None else cupy.asarray(frame(b)) for b in batches]
        got = self.all_to_all(frames)
        out: list[tuple[EncodedBatch, Any] | None] = []
        for buf in got:
            if buf is None or not buf.nbytes:
                out.append(None)
                continue
            size = int(cupy.asnumpy(buf[:8]).view(np.int64)[0])
            out.append(unframe(buf, cupy.asnumpy(buf[:8 + size])))
        return out

    def close(self) -> None:
        self.comm.destroy()
