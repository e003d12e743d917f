"""The GPU engine's host work on a machine without a GPU: a stand-in ``cupy`` whose arrays are NumPy
arrays and whose kernels do nothing, so a ``device="gpu"`` connection runs its Python (planning, the
plan cache, reuse of fused state, the device page cache, the pipeline driver, launches, finish, the
host tail, the result) for real, for a profile of where a hot query's host milliseconds go.

    PYTHONPATH=src python scripts/host_only_gpu.py DB [--suite ssb] [--queries q1.1,q2.1] [--runs 50]
        [--top 30] [--option k=v] [--groups]

Use a database without compression (``hetdb generate ssb DB --sf 0.1 --compression none``): its pages
reach the stand-in "device" as byte copies, so scans, filters and dimension builds see true values.
Generated and .cu kernels are not run (launches are counted): answers are wrong (a fused aggregation
finds no rows), and nothing here says anything about device time. A measuring aid only: nothing in
``src/`` or ``tests/`` uses it.

Per query: the median wall time of ``--runs`` hot runs, the host time before the first launch and
after the last one (the stand-in's kernels take no time: what follows the launch is the finish, the
host tail, the result and the statistics), Python calls per run, and a cProfile of them (top
functions by own time and by cumulative time, hetdb's only).

``--groups``: a dense fused aggregation's launch marks every group of its domain non-empty (stand-in
counts and sums), so the finish, the host tail's sort and the Arrow result handle as many groups
as on the GPU (SSB at a large scale factor: nearly every group of the filtered domains has rows);
the dimension builds run operator at a time (HETDB_GPU_COMPILE_OFF=row_sinks: their filters in
NumPy, so the domains are the real ones).
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import io
import os
import pstats
import statistics
import sys
import time
import types
import weakref

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the stand-in's streams, events and CuPy-level call counts (CALLS) are host_only_cupy's
from host_only_cupy import CALLS, Event, Stream, _count, _Ptr  # noqa: E402
from host_only_cupy import Device as _Device  # noqa: E402


class ndarray(np.ndarray):
    """A NumPy array that answers like a CuPy array (``.data.ptr``, ``get``, ``set``)."""

    def __array_finalize__(self, obj) -> None:
        if self.base is None:  # (new memory: astype, arithmetic, copies; a view's owner is counted)
            _track(self)

    @property
    def data(self):  # type: ignore[override]
        return _Ptr(int(self.__array_interface__["data"][0]))

    def get(self, stream=None, out=None):
        _count("ndarray.get (device -> host, waits)")
        host = np.asarray(self).copy()
        if out is not None:
            out[...] = host
            return out
        return host

    def set(self, host, stream=None):
        _count("ndarray.set (host -> device)")
        self.view(np.ndarray)[...] = np.asarray(host).reshape(self.shape).view(self.dtype)

    @property
    def device(self):
        return Device(0)


LIVE = [0]  # bytes of the stand-in "device" arrays alive (the memory pool's used_bytes)
_OWNED: dict[int, object] = {}


def _track(a: np.ndarray) -> None:
    """Count the memory ``a`` views as device memory until its owner is freed."""
    owner = a
    while isinstance(owner, np.ndarray) and isinstance(owner.base, np.ndarray):
        owner = owner.base
    if not isinstance(owner, np.ndarray) or owner.base is not None or id(owner) in _OWNED:
        return
    n, key = int(owner.nbytes), id(owner)
    LIVE[0] += n

    def gone() -> None:
        LIVE[0] -= n
        _OWNED.pop(key, None)

    _OWNED[key] = weakref.finalize(owner, gone)


def _wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, ndarray):
        _track(x)
        return x.view(ndarray)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _numpy_function(name: str):
    fn = getattr(np, name)
    if not callable(fn) or isinstance(fn, type):
        return fn

    def call(*a, **k):
        k.pop("stream", None)
        _count(f"cupy.{name}")
        return _wrap(fn(*a, **k))

    call.__name__ = name
    return call


_NULL = Stream(null=True)


_ATTRIBUTES = {"MultiProcessorCount": 132, "MaxThreadsPerMultiProcessor": 2048,
               "MaxSharedMemoryPerMultiprocessor": 228 * 1024, "MaxRegistersPerMultiprocessor": 65536,
               "MaxSharedMemoryPerBlockOptin": 227 * 1024, "MaxSharedMemoryPerBlock": 48 * 1024,
               "L2CacheSize": 50 * 1024 * 1024, "ComputeCapabilityMajor": 9, "ComputeCapabilityMinor": 0}


class Device(_Device):
    """host_only_cupy's device with an H100's attributes and memory."""

    def __init__(self, device_id: int | None = None) -> None:
        super().__init__(None if device_id is None else int(device_id))
        self.attributes = dict(_ATTRIBUTES)
        self.compute_capability = "90"

    @property
    def mem_info(self):
        return (70 << 30, 80 << 30)


class _MemoryPool:
    def __init__(self) -> None:
        self.limit = 0

    def used_bytes(self) -> int:
        return LIVE[0] if self.device else 0

    device = False

    def total_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def free_all_blocks(self, stream=None) -> None:
        pass

    def set_limit(self, size=None, fraction=None) -> None:
        self.limit = size or 0

    def get_limit(self) -> int:
        return self.limit

    def n_free_blocks(self) -> int:
        return 0

    def malloc(self, n: int):
        return bytearray(max(int(n), 1))


class _PinnedMemory:
    """Host memory standing in for page-locked memory (a bytearray: NumPy arrays view it)."""

    def __init__(self, n: int) -> None:
        self.buf = bytearray(max(int(n), 1))
        self.ptr = ctypes.addressof(ctypes.c_char.from_buffer(self.buf))
        self.size = int(n)


def _pinned_memory_pointer(mem: _PinnedMemory, offset: int = 0) -> memoryview:
    return memoryview(mem.buf)[offset:]


class _Function:
    """A kernel that does nothing when launched (launches are counted)."""

    launches = 0
    num_regs = 40
    local_size_bytes = 0
    shared_size_bytes = 0
    max_threads_per_block = 1024

    def __init__(self, name: str) -> None:
        self.name = name
        self.ptr = 0
        self.attributes = {}

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None, **_):
        _Function.launches += 1
        LAUNCHED.append(time.perf_counter())
        _count("kernel launch")
        if self.name == "upload_words":  # (backend/gpu/upload.py: a copy the host-only path needs done)
            src, dst, words = args
            ctypes.memmove(int(dst.data.ptr), int(src), 8 * int(words))


LAUNCHED: list[float] = []  # perf_counter at each launch (the host split)


def _fill_groups() -> None:
    """Dense fused aggregations' launches make every group of their domain non-empty (also a hot
    replay's launch again of a kept launch: exec/hot_replay._relaunch)."""
    from hetdb.backend.gpu import compile as C
    from hetdb.backend.gpu.codegen import runtime as R

    real, real_launch = R.FusedPipeline._launch_aggregate, C.launch
    filled: dict[int, tuple] = {}  # id(launch arguments) -> (pipeline, weak reference to the state)

    def fill(pipeline, state) -> None:
        for k, (a, arr) in enumerate(zip(pipeline.kernel.accumulators, state.accumulators)):
            host = arr.view(np.ndarray)  # (the first accumulator counts a group's rows)
            # (values that vary by group, with ties: an ORDER BY on an aggregate has work to do)
            varied = (np.arange(host.shape[0], dtype=np.int64) * 7919) % 97 * 1000 + 5
            if a.kind in ("f64", "order_f64"):
                host.view(np.float64)[:] = varied
            else:
                host[:] = 7 if k == 0 else varied

    def launch_aggregate(self, state, args, tiles):
        real(self, state, args, tiles)
        if getattr(state, "launch", None) is not None:
            if len(filled) > 256:
                filled.clear()
            filled[id(state.launch[3])] = (self, weakref.ref(state))  # (no reference: not a leak)
        fill(self, state)

    def launch(fn, grid, block, args, shared_mem=0):
        real_launch(fn, grid, block, args, shared_mem)
        hit = filled.get(id(args))
        state = hit[1]() if hit is not None else None
        if state is not None and state.launch is not None and state.launch[3] is args:
            fill(hit[0], state)

    R.FusedPipeline._launch_aggregate = launch_aggregate
    C.launch = launch
    from hetdb.backend.cpu import CpuBackend
    from hetdb.backend.gpu.backend import GpuBackend

    cpu = CpuBackend()
    def on_host(fn):
        return lambda self, *a, **k: _wrap(fn(*(np.asarray(x) if isinstance(x, np.ndarray) else x for x in a), **k))

    for name in ("compare_string_scalar", "like"):  # (the dimensions' string filters, in NumPy)
        setattr(GpuBackend, name, on_host(getattr(cpu, name)))


class RawModule:
    def __init__(self, code: str | None = None, path: str | None = None, options=(), name_expressions=(),
                 backend: str = "nvrtc", **_) -> None:
        self.code, self.path = code, path

    def get_function(self, name: str) -> _Function:
        return _Function(name)

    def get_global(self, name: str):
        return ndarray((1,), dtype=np.uint8)


class RawKernel(_Function):
    def __init__(self, code: str, name: str, options=(), **_) -> None:
        super().__init__(name)


def _memcpy_async(dst: int, src: int, n: int, kind: int, stream: int = 0) -> None:
    _count("runtime.memcpyAsync")
    if n:
        ctypes.memmove(int(dst), int(src), int(n))


def _asarray(a, dtype=None, order=None, blocking=False):
    _count("cupy.asarray" if isinstance(a, ndarray) else "cupy.asarray (host -> device)")
    if not isinstance(a, ndarray):  # (a host array: a new device copy)
        a = np.array(a, dtype=dtype, order="C", copy=True)
    out = np.ascontiguousarray(a, dtype=dtype)
    _track(out)
    return out.view(ndarray)


def _empty(shape, dtype=float, order="C"):
    _count("cupy.empty")
    out = np.empty(shape, dtype=dtype, order=order)
    _track(out)
    return out.view(ndarray)


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    _count("cupy.asnumpy (device -> host, waits)")
    host = np.array(a, copy=True, order=order) if not isinstance(a, np.ndarray) else np.asarray(a).copy()
    if out is not None:
        out[...] = host
        return out
    return host


def _alloc_pinned_memory(n: int) -> memoryview:
    return _pinned_memory_pointer(_PinnedMemory(n))


def install() -> types.ModuleType:
    """Make ``import cupy`` give the stand-in (idempotent)."""
    got = sys.modules.get("cupy")
    if got is not None and getattr(got, "HOST_ONLY", False):
        return got
    cupy = types.ModuleType("cupy")
    cupy.HOST_ONLY = True
    cupy.__version__ = "0.0-host-only"
    cupy.ndarray = ndarray
    for name in dir(np):
        if not name.startswith("_") and not hasattr(cupy, name):
            setattr(cupy, name, _numpy_function(name))
    cupy.ndarray = ndarray
    cupy.empty, cupy.asarray, cupy.asnumpy = _empty, _asarray, _asnumpy
    cupy.ascontiguousarray = _asarray
    cupy.RawModule, cupy.RawKernel = RawModule, RawKernel
    pool, pinned = _MemoryPool(), _MemoryPool()
    pool.device = True
    cupy.get_default_memory_pool = lambda: pool
    cupy.get_default_pinned_memory_pool = lambda: pinned
    cupy.get_array_module = lambda *a: cupy
    cuda = types.ModuleType("cupy.cuda")
    cuda.Stream, cuda.Event, cuda.Device = Stream, Event, Device
    cuda.get_current_stream = lambda device=None: Stream._current or _NULL
    cuda.get_elapsed_time = lambda a, b: 0.0
    cuda.PinnedMemoryPool = lambda *a, **k: _MemoryPool()
    cuda.PinnedMemory = _PinnedMemory
    cuda.PinnedMemoryPointer = _pinned_memory_pointer
    cuda.alloc_pinned_memory = _alloc_pinned_memory
    cuda.set_pinned_memory_allocator = lambda *a, **k: None
    cuda.set_allocator = lambda *a, **k: None
    cuda.MemoryPool = _MemoryPool

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id=0):
            self.ptr, self.size, self.owner = int(ptr), int(size), owner

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset

    cuda.UnownedMemory, cuda.MemoryPointer = UnownedMemory, MemoryPointer
    memory = types.ModuleType("cupy.cuda.memory")

    class OutOfMemoryError(MemoryError):
        pass

    memory.OutOfMemoryError = OutOfMemoryError
    cuda.memory = memory
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.memcpyAsync = _memcpy_async
    runtime.memcpy = lambda dst, src, n, kind: _memcpy_async(dst, src, n, kind)
    runtime.deviceSynchronize = lambda: None
    runtime.getDeviceCount = lambda: 1
    runtime.runtimeGetVersion = lambda: 13000
    runtime.driverGetVersion = lambda: 13000
    runtime.memGetInfo = lambda: (70 << 30, 80 << 30)
    runtime.getDeviceProperties = lambda i: {"name": b"host-only stand-in", "totalGlobalMem": 80 << 30,
                                             "multiProcessorCount": 132, "major": 9, "minor": 0}
    runtime.memcpyHostToDevice, runtime.memcpyDeviceToHost, runtime.memcpyDeviceToDevice = 1, 2, 3
    runtime.memcpyDefault = 4
    runtime.hostAlloc = lambda n, flags=0: _PinnedMemory(n).ptr
    runtime.freeHost = lambda p: None
    runtime.hostRegister = lambda *a: None
    runtime.hostUnregister = lambda *a: None
    runtime.streamSynchronize = lambda s: None
    cuda.runtime = runtime
    cupy.cuda = cuda
    for name, mod in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.runtime", runtime),
                      ("cupy.cuda.memory", memory)):
        sys.modules[name] = mod
    # a delivery's copies as the stand-in's memcpyAsync calls: on a machine with a CUDA driver,
    # backend/gpu/copies.py would find its batch call and hand it the stand-in's host addresses
    from hetdb.backend.gpu import copies

    copies.BATCH_CALL = False
    return cupy


def _no_compile() -> None:
    """Kernels load as stand-ins without NVRTC (no source is compiled)."""
    from hetdb.backend.gpu import compile as C
    from hetdb.backend.gpu.codegen import runtime as R

    def module(*a, **k):
        return C.CompiledModule(RawModule(), {}, None)

    C.get_module = lambda filename, name_expressions=(), *a, **k: module()
    R.compile_source = lambda source, filename="fused.cu": module()
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("hetdb.") and getattr(mod, "get_module", None) is not None \
                and mod is not C and getattr(mod.get_module, "__module__", "") == C.__name__:
            mod.get_module = C.get_module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q2.1,q3.4,q4.1")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--option", action="append", default=[], help="connection option name=value")
    ap.add_argument("--groups", action="store_true", help="fused aggregations fill their domains (see above)")
    args = ap.parse_args(argv)
    if args.groups:
        os.environ["HETDB_GPU_COMPILE_OFF"] = ",".join(
            [*filter(None, os.environ.get("HETDB_GPU_COMPILE_OFF", "").split(",")), "row_sinks"])
    install()
    from scripts_common import parse_options

    import hetdb
    from hetdb.bench.suites import load_queries

    _no_compile()
    if args.groups:
        _fill_groups()
    qs = {q.name: q.sql for q in load_queries(args.suite)}
    with hetdb.connect(args.db, device="gpu", **parse_options(args.option)) as con:
        for name in args.queries.split(","):
            sql = qs[name]
            for _ in range(1 + args.warmup):
                con.sql(sql).arrow()
            walls, before, after = [], [], []
            launches = _Function.launches
            for _ in range(args.runs):
                LAUNCHED.clear()
                t = time.perf_counter()
                res = con.sql(sql)
                res.arrow()
                end = time.perf_counter()
                walls.append(end - t)
                if LAUNCHED:
                    before.append(LAUNCHED[0] - t)
                    after.append(end - LAUNCHED[-1])
            st = res.stats
            CALLS.clear()
            con.sql(sql).arrow()
            ops = sorted(CALLS.items(), key=lambda kv: -kv[1])
            print(f"{name}: median {statistics.median(walls) * 1e3:.3f} ms (min {min(walls) * 1e3:.3f}), plan "
                  f"{st.get('plan_seconds', 0) * 1e3:.3f} ms, exec {st.get('exec_seconds', 0) * 1e3:.3f} ms, "
                  f"{(_Function.launches - launches) / args.runs:.1f} launches per run, modes "
                  f"{st.get('gpu_pipelines')}, fused pipelines replayed {st.get('hot_replayed', 0)}, {st.get('rows')} rows",
                  flush=True)
            if before:
                print(f"  host before the first launch {statistics.median(before) * 1e3:.3f} ms, after the last "
                      f"{statistics.median(after) * 1e3:.3f} ms (medians)", flush=True)
            print(f"  CuPy-level calls in one run ({sum(CALLS.values())}): "
                  + ", ".join(f"{k} x{v}" for k, v in ops), flush=True)
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.runs):
                con.sql(sql).arrow()
            prof.disable()
            out = io.StringIO()
            ps = pstats.Stats(prof, stream=out)
            calls = sum(v[1] for v in ps.stats.values()) / args.runs
            print(f"  {calls:,.0f} Python calls per run", flush=True)
            ps.sort_stats("tottime").print_stats(args.top)
            ps.sort_stats("cumtime").print_stats(r"hetdb", args.top)
            text = "\n".join(line for line in out.getvalue().splitlines() if line.strip())
            print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
