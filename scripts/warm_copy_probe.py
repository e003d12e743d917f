"""Warm deliveries' host->device copies: how many, how large, where their host bytes lie, and how
fast the DMA moves them as issued against fewer, larger copies of the same host bytes.

    PYTHONPATH=src python scripts/warm_copy_probe.py DB [--suite ssb] [--queries q1.1,q4.1] [--only-copies]

Prints, in order:

    machine   the GPU, its PCIe link and NUMA node, the host's NUMA nodes, this process's CPUs
    sweep     pinned copies of one size back to back over 256 MiB, per size: GB/s and the time a copy
              costs beyond its bytes at the one-copy rate (us/copy); the same 1.25 MiB copies over two
              streams, and as one cuMemcpyBatchAsync (when the driver has it); 64 MiB of 1.25 MiB
              copies right after 0.3 s idle against the same again at once (does the link wake slowly?)
    source    one copy / 4 MiB / 1.25 MiB copies out of the host tier's chunks, a fresh cudaHostAlloc
              buffer (256 MiB, 1 GiB), THP memory registered with cudaHostRegister, write-combined memory
    numa      the NUMA node of the host tier's chunks; per node, one 256 MiB pinned buffer allocated by
              a thread on that node's CPUs and its copy rate
    per query (one untimed warm run, then one warm run with every host->device memcpyAsync recorded: the
              engine's batch call, backend/gpu/copies.py BATCH_CALL, is off for it; its order stays),
              the host tier's layout of the query's columns (per column: pages, and how many follow
              the previous row group's page in the tier, so a copy could span them), the in-query
              deliveries (copies, sizes, GPU ms of the copy stream: events around each), then the same
              copies replayed on the idle GPU:
        asis      as the plan orders them (column by column), one stream
        sorted    in ascending host-address order (backend/gpu/copies.py SORTED, the default)
        fresh     the same copy sizes out of a fresh cudaHostAlloc buffer (the source memory's part)
        two       as issued, alternating over two streams
        batch     each delivery's copies as one cuMemcpyBatchAsync; sbatch: sorted too (the engine's default)
        kernel    as issued, while a memory-bound kernel runs on another stream
        hostmem   as issued, while 4 host threads copy memory (the host's DRAM busy)
        linked    per delivery, copies sorted by host address and merged within one tier chunk where
                  under 1 MiB apart (the gap copied along)
        span      per delivery and tier chunk, one copy from its first to its last byte
      each: copies, bytes moved, ms, GB/s of the delivery's own bytes (what the link did for the query).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import subprocess
import threading
import time

import numpy as np

import hetdb
from hetdb.bench.suites import load_queries

PIECE = 1_310_720  # 1.25 MiB (warm_timeline's small-copy ceiling)


def machine() -> None:
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    bus = dev.pci_bus_id.lower()
    node = "?"
    try:
        with open(f"/sys/bus/pci/devices/{bus}/numa_node") as f:
            node = f.read().strip()
    except OSError:
        pass
    print(f"machine: {props['name'].decode()} bus {bus} numa_node {node}; cpus {len(os.sched_getaffinity(0))} "
          f"of {os.cpu_count()}; {platform.machine()}", flush=True)
    nodes = sorted(d for d in os.listdir("/sys/devices/system/node") if d.startswith("node")) \
        if os.path.isdir("/sys/devices/system/node") else []
    for d in nodes:
        try:
            with open(f"/sys/devices/system/node/{d}/cpulist") as f:
                cpus = f.read().strip()
            with open(f"/sys/devices/system/node/{d}/meminfo") as f:
                total = next((ln.split()[-2] for ln in f if "MemTotal" in ln), "?")
        except OSError:
            cpus = total = "?"
        print(f"  {d}: cpus {cpus} mem {total} kB", flush=True)
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=pcie.link.gen.current,pcie.link.gen.max,"
                              "pcie.link.width.current,pcie.link.width.max,clocks.mem,clocks.sm",
                              "--format=csv"], capture_output=True, text=True, timeout=10).stdout
        print("  nvidia-smi: " + " | ".join(ln.strip() for ln in out.splitlines()), flush=True)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"  nvidia-smi: {e}", flush=True)


# ---- copies -------------------------------------------------------------------------------------------

def batch_copier():
    """The engine's cuMemcpyBatchAsync (backend/gpu/copies.py): f(dsts, srcs, sizes, stream) -> queued, or None."""
    from hetdb.backend.gpu.copies import _batch_call

    return _batch_call()


def timed_copies(groups, streams, how="memcpy") -> float:
    """ms for ``groups`` (lists of (dst, src, n)) queued back to back: one after another on streams[0],
    alternating over ``streams`` (how="memcpy"), or one batch call per group (how="batch")."""
    import cupy

    rt = cupy.cuda.runtime
    s0 = streams[0]
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record(s0)
    for s in streams[1:]:
        s.wait_event(e0)
    k = 0
    for group in groups:
        if how == "batch":
            if not batch_copier()([d for d, _, _ in group], [s for _, s, _ in group], [n for _, _, n in group], s0.ptr):
                raise RuntimeError("cuMemcpyBatchAsync refused the copies")
            continue
        for d, s, n in group:
            rt.memcpyAsync(d, s, n, 1, streams[k % len(streams)].ptr)
            k += 1
    for s in streams[1:]:
        ev = cupy.cuda.Event(disable_timing=True)
        ev.record(s)
        s0.wait_event(ev)
    e1.record(s0)
    e1.synchronize()
    return cupy.cuda.get_elapsed_time(e0, e1)


def sweep() -> float:
    """Copy rate per copy size; returns the one-copy GB/s."""
    import cupy

    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    n = 256 << 20
    host = pinned_empty(n, np.uint8)
    host[:] = 1
    dev = cupy.empty(n, dtype=cupy.uint8)
    a, b = new_stream(), new_stream()
    hp, dp = host.ctypes.data, int(dev.data.ptr)

    def pieces(size: int, total: int = n) -> list:
        return [(dp + off, hp + off, min(size, total - off)) for off in range(0, total, size)]

    def best(groups, streams, how="memcpy", reps=3) -> float:
        return min(timed_copies(groups, streams, how) for _ in range(reps))

    one = best([pieces(n)], [a])
    peak = n / one / 1e6
    out = []
    for size in (64 << 10, 256 << 10, 512 << 10, 1 << 20, PIECE, 2 << 20, 4 << 20, 16 << 20, 64 << 20):
        ms = best([pieces(size)], [a])
        count = -(-n // size)
        out.append(f"{size >> 10}K {n / ms / 1e6:.1f} GB/s ({(ms - one) / count * 1e3:.2f} us/copy)")
    print(f"sweep: one 256 MiB copy {peak:.1f} GB/s; " + "; ".join(out), flush=True)
    two = best([pieces(PIECE)], [a, b])
    line = f"  1.25 MiB copies over two streams {n / two / 1e6:.1f} GB/s"
    if batch_copier() is not None:
        try:
            ms = best([pieces(PIECE)], [a], "batch")
            line += f"; as one cuMemcpyBatchAsync {n / ms / 1e6:.1f} GB/s"
            ms = best([pieces(512 << 10)], [a], "batch")
            line += f" (512K pieces {n / ms / 1e6:.1f} GB/s)"
        except Exception as e:  # noqa: BLE001 - a probe reports and goes on
            line += f"; batch copy failed: {e}"
    else:
        line += "; no cuMemcpyBatchAsync in the driver"
    print(line, flush=True)
    small = pieces(PIECE, 64 << 20)
    idle = []
    for _ in range(3):
        time.sleep(0.3)
        first = timed_copies([small], [a])
        again = timed_copies([small], [a])
        idle.append(f"{(64 << 20) / first / 1e6:.1f}/{(64 << 20) / again / 1e6:.1f}")
    print(f"  64 MiB of 1.25 MiB copies after 0.3 s idle / at once after: {' '.join(idle)} GB/s", flush=True)
    return peak


# ---- NUMA ----------------------------------------------------------------------------------------------

def page_nodes(addresses: list[int]) -> list[int]:
    """NUMA node of the memory page at each address (move_pages with no target: a query); -errno when
    the kernel cannot say; [] when the syscall is not available."""
    nr = {"x86_64": 279, "aarch64": 239}.get(platform.machine())
    if nr is None or not addresses:
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    count = len(addresses)
    pages = (ctypes.c_void_p * count)(*[a - a % 4096 for a in addresses])
    status = (ctypes.c_int * count)()
    rc = libc.syscall(ctypes.c_long(nr), ctypes.c_int(0), ctypes.c_ulong(count), pages, None, status, ctypes.c_int(0))
    if rc != 0:
        return [-ctypes.get_errno()] * count
    return list(status)


def numa() -> None:
    import cupy

    from hetdb.backend.gpu.memory import new_stream
    from hetdb.cache.host_cache import existing_shared_host_cache, pinned_allocate

    tier = existing_shared_host_cache()
    if tier is not None and tier._pool.chunks:
        nodes = page_nodes([int(c.ctypes.data) + off for c in tier._pool.chunks
                            for off in range(0, int(c.shape[0]), 16 << 20)])
        counts: dict[int, int] = {}
        for x in nodes:
            counts[x] = counts.get(x, 0) + 1
        print(f"numa: host tier {len(tier._pool.chunks)} chunks, 16 MiB samples by node {counts}", flush=True)
    root = "/sys/devices/system/node"
    nodes_cpus = {}
    for d in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if d.startswith("node"):
            try:
                with open(f"{root}/{d}/cpulist") as f:
                    text = f.read().strip()
            except OSError:
                continue
            cpus = set()
            for part in text.split(","):
                if not part:
                    continue
                lo, _, hi = part.partition("-")
                cpus.update(range(int(lo), int(hi or lo) + 1))
            cpus &= os.sched_getaffinity(0)
            if cpus:
                nodes_cpus[int(d[4:])] = cpus
    if len(nodes_cpus) < 2:
        print(f"numa: {len(nodes_cpus)} node(s) with this process's CPUs: nothing to compare", flush=True)
        return
    n = 256 << 20
    dev = cupy.empty(n, dtype=cupy.uint8)
    s = new_stream()
    def alloc(cpus: set[int], got: dict) -> None:  # (a thread of its own: affinity is per thread)
        os.sched_setaffinity(0, cpus)
        with cupy.cuda.Device(0):
            buf = pinned_allocate(n)
            buf[:] = 1
        got["buf"] = buf

    for node, cpus in nodes_cpus.items():
        got: dict = {}
        t = threading.Thread(target=alloc, args=(cpus, got))
        t.start()
        t.join()
        buf = got.pop("buf")
        where = page_nodes([int(buf.ctypes.data) + off for off in range(0, n, 32 << 20)])
        base, hp = int(dev.data.ptr), int(buf.ctypes.data)
        one = min(timed_copies([[(base, hp, n)]], [s]) for _ in range(3))
        small = min(timed_copies([[(base + o, hp + o, min(PIECE, n - o)) for o in range(0, n, PIECE)]], [s])
                    for _ in range(3))
        print(f"  buffer made on node {node}'s CPUs (pages on {sorted(set(where))}): one copy {n / one / 1e6:.1f} "
              f"GB/s, 1.25 MiB copies {n / small / 1e6:.1f} GB/s", flush=True)
        del buf


# ---- source memory -------------------------------------------------------------------------------------

def source_rates() -> None:
    """One 256 MiB copy and 4 MiB / 1.25 MiB copies out of: the host tier's first chunks, a fresh
    cudaHostAlloc buffer, 1 GiB of one (a larger working set), anonymous memory with transparent huge
    pages registered (cudaHostRegister), write-combined pinned memory."""
    import mmap

    import cupy

    from hetdb.backend.gpu.memory import new_stream, pinned_empty
    from hetdb.cache.host_cache import existing_shared_host_cache

    n = 256 << 20
    dev = cupy.empty(1 << 30, dtype=cupy.uint8)
    base = int(dev.data.ptr)
    s = new_stream()

    def rates(hp: int, size: int = n) -> str:
        out = []
        for piece in (size, 4 << 20, PIECE):
            ms = min(timed_copies([[(base + o, hp + o, min(piece, size - o)) for o in range(0, size, piece)]], [s])
                     for _ in range(3))
            out.append(f"{size / ms / 1e6:.1f}")
        return "/".join(out) + " GB/s (one/4M/1.25M)"

    tier = existing_shared_host_cache()
    for i, c in enumerate((tier._pool.chunks if tier is not None else [])[:3]):
        m = min(n, int(c.shape[0]))
        print(f"source: tier chunk {i} ({int(c.shape[0]) >> 20} MiB, first {m >> 20} MiB): {rates(int(c.ctypes.data), m)}",
              flush=True)
    fresh = pinned_empty(1 << 30, np.uint8)
    fresh[:] = 1
    print(f"source: fresh cudaHostAlloc 256 MiB: {rates(fresh.ctypes.data)}; 1 GiB: "
          f"{rates(fresh.ctypes.data, 1 << 30)}", flush=True)
    del fresh
    try:
        mm = mmap.mmap(-1, n + (2 << 20))
        arr = np.frombuffer(mm, np.uint8)
        start = (-arr.ctypes.data) % (2 << 20)
        mm.madvise(mmap.MADV_HUGEPAGE, start, n)
        view = arr[start:start + n]
        view[:] = 1
        hp = int(view.ctypes.data)
        cupy.cuda.runtime.hostRegister(hp, n, 0)
        try:
            line = rates(hp)
        finally:
            cupy.cuda.runtime.hostUnregister(hp)
        huge = "?"
        try:
            with open("/proc/self/smaps_rollup") as f:
                huge = next((ln.split()[1] for ln in f if ln.startswith("AnonHugePages")), "?")
        except OSError:
            pass
        print(f"source: mmap + THP + cudaHostRegister 256 MiB: {line} (AnonHugePages {huge} kB)", flush=True)
        del view, arr
        mm.close()
    except Exception as e:  # noqa: BLE001 - a probe reports and goes on
        print(f"source: THP registered failed: {type(e).__name__}: {e}", flush=True)
    try:
        wc = cupy.cuda.PinnedMemory(n, 4)  # cudaHostAllocWriteCombined
        arr = np.frombuffer(cupy.cuda.PinnedMemoryPointer(wc, 0), dtype=np.uint8, count=n)
        arr[:] = 1
        print(f"source: write-combined cudaHostAlloc 256 MiB: {rates(arr.ctypes.data)}", flush=True)
        del arr, wc
    except Exception as e:  # noqa: BLE001
        print(f"source: write-combined failed: {type(e).__name__}: {e}", flush=True)


# ---- a query's warm copies -------------------------------------------------------------------------------

class Recorder:
    """Every host->device cupy.cuda.runtime.memcpyAsync while ``on``, grouped by run_delivery call
    (copies outside one go to a group of their own), with CUDA events around each delivery."""

    def __init__(self) -> None:
        import cupy

        from hetdb.backend.gpu import batch

        self.cupy = cupy
        self.on = False
        self.groups: list[dict] = []
        self._current: dict | None = None
        rt = cupy.cuda.runtime
        orig_copy = rt.memcpyAsync
        orig_delivery = batch.run_delivery

        def memcpy(dst, src, size, kind, stream):
            if self.on and kind == 1:
                group = self._current
                if group is None:  # (copies outside a batched delivery: one group per run of them)
                    group = self.groups[-1] if self.groups and self.groups[-1]["loose"] else None
                if group is None:
                    group = {"copies": [], "bytes": 0, "events": None, "loose": True}
                    self.groups.append(group)
                group["copies"].append((int(dst), int(src), int(size)))
                if not group["loose"] and group.get("first") is None and size >= 64 << 10:
                    # (the delivery's first data copy: what came before it on the stream was host work)
                    first = cupy.cuda.Event()
                    first.record(cupy.cuda.ExternalStream(int(stream)))
                    group["first"] = first
            return orig_copy(dst, src, size, kind, stream)

        def run_delivery(plan, sources, dtypes, stream, staged=None, **kw):
            if not self.on:
                return orig_delivery(plan, sources, dtypes, stream, staged, **kw)
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            group = {"copies": [], "bytes": sum(c[3] for c in plan.copies), "events": (e0, e1), "loose": False,
                     "nbytes": plan.nbytes}
            self.groups.append(group)
            self._current = group
            e0.record(stream)
            try:
                return orig_delivery(plan, sources, dtypes, stream, staged, **kw)
            finally:
                e1.record(stream)
                self._current = None

        rt.memcpyAsync = memcpy
        batch.run_delivery = run_delivery


def chunk_of(tier, address: int) -> int:
    for i, c in enumerate(tier._pool.chunks):
        lo = int(c.ctypes.data)
        if lo <= address < lo + int(c.shape[0]):
            return i
    return -1


def merged(copies: list, tier, gap: int, whole: bool = False) -> list:
    """(src, n) copies covering ``copies``' host bytes: sorted by address, joined inside one tier chunk
    when under ``gap`` apart (or always, ``whole``)."""
    out: list[list[int]] = []
    for _, src, n in sorted(copies, key=lambda c: c[1]):
        ch = chunk_of(tier, src)
        if out and out[-1][2] == ch and ch >= 0 and (whole or src - (out[-1][0] + out[-1][1]) <= gap):
            out[-1][1] = max(out[-1][1], src + n - out[-1][0])
            continue
        out.append([src, n, ch])
    return [(s, n) for s, n, _ in out]


def layout(tier, columns: set[str]) -> str:
    """Per column of the tier: pages, and how many lie right after the previous row group's page."""
    per: dict[str, list] = {}
    for key, page in tier._entries.items():
        if key.column in columns and page.runs and key.row_group >= 0:
            per.setdefault(key.column, []).append((key.row_group, int(page.runs[0].ctypes.data),
                                                   len(page.blocks) * tier.block_bytes, len(page.runs)))
    parts = []
    for col, pages in sorted(per.items()):
        pages.sort()
        follow = sum(1 for a, b in zip(pages, pages[1:]) if b[0] == a[0] + 1 and b[1] == a[1] + a[2])
        runs = sum(p[3] for p in pages)
        parts.append(f"{col} {len(pages)}p/{runs}runs follow {follow}")
    return "; ".join(parts)


def describe(copies: list) -> str:
    sizes = sorted(n for _, _, n in copies)
    if not sizes:
        return "0 copies"
    q = statistics.quantiles(sizes, n=10) if len(sizes) > 1 else [sizes[0]] * 9
    return (f"{len(sizes)} copies {sum(sizes) / 1e6:.1f} MB (KiB min {sizes[0] >> 10} p10 {int(q[0]) >> 10} "
            f"p50 {int(q[4]) >> 10} p90 {int(q[8]) >> 10} max {sizes[-1] >> 10})")


def replay(groups: list[dict], tier) -> None:
    import cupy

    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    big = [g for g in groups if g["copies"] and sum(n for _, _, n in g["copies"]) >= 1 << 20]
    if not big:
        print("  replay: no delivery of 1 MB or more", flush=True)
        return
    useful = sum(sum(n for _, _, n in g["copies"]) for g in big)
    span = max(max(d + n for d, _, n in g["copies"]) - min(d for d, _, _ in g["copies"]) for g in big)
    linked = [merged(g["copies"], tier, 1 << 20) for g in big]
    spans = [merged(g["copies"], tier, 0, whole=True) for g in big]
    room = max([span] + [sum(n for _, n in m) for m in linked + spans])
    dev = cupy.empty(room + 4096, dtype=cupy.uint8)
    base = int(dev.data.ptr)

    def rebased(g) -> list:
        lo = min(d for d, _, _ in g["copies"])
        return [(base + d - lo, s, n) for d, s, n in g["copies"]]

    def packed(m) -> list:
        out, off = [], 0
        for s, n in m:
            out.append((base + off, s, n))
            off += n
        return out

    asis = [rebased(g) for g in big]
    # the same copy sizes out of a fresh cudaHostAlloc buffer (back to back, wrapping at 1 GiB)
    fresh_buf = pinned_empty(1 << 30, np.uint8)
    fresh_buf[:] = 1
    fp, off, fresh = int(fresh_buf.ctypes.data), 0, []
    for g in asis:
        got = []
        for d, _, n in g:
            if off + n > 1 << 30:
                off = 0
            got.append((d, fp + off, n))
            off += -(-n // 4096) * 4096
        fresh.append(got)
    a, b, k = new_stream(), new_stream(), new_stream()
    ordered = [sorted(g, key=lambda c: c[1]) for g in asis]
    cases = [("asis", asis, [a], "memcpy"), ("sorted", ordered, [a], "memcpy"), ("fresh", fresh, [a], "memcpy"),
             ("two", asis, [a, b], "memcpy")]
    if batch_copier() is not None:
        cases += [("batch", asis, [a], "batch"), ("sbatch", ordered, [a], "batch")]
    cases += [("linked", [packed(m) for m in linked], [a], "memcpy"),
              ("span", [packed(m) for m in spans], [a], "memcpy")]
    for name, groups_, streams, how in cases:
        try:
            ms = min(timed_copies(groups_, streams, how) for _ in range(3))
        except Exception as e:  # noqa: BLE001 - a probe reports and goes on
            print(f"  replay {name}: failed: {type(e).__name__}: {e}", flush=True)
            continue
        moved = sum(n for g in groups_ for _, _, n in g)
        count = sum(len(g) for g in groups_)
        print(f"  replay {name:7s}: {count} copies {moved / 1e6:.1f} MB moved ({100 * (moved - useful) / useful:+.1f}%) "
              f"{ms:.2f} ms = {useful / ms / 1e6:.1f} GB/s of the deliveries' bytes", flush=True)
    # per delivery on its own (is a slow one slow in its sources or only in the query?)
    per = []
    for g, o in zip(asis, ordered):
        nb = sum(n for _, _, n in g)
        one = min(timed_copies([g], [a]) for _ in range(3))
        srt = min(timed_copies([o], [a]) for _ in range(3))
        per.append(f"{nb / 1e6:.0f}MB {nb / one / 1e6:.1f}/{nb / srt / 1e6:.1f}")
    print("  replay per delivery (MB asis/sorted GB/s): " + "; ".join(per), flush=True)
    # as issued, with the GPU's memory busy (a copy kernel on another stream) and the host's DRAM busy
    x = cupy.empty(1 << 30, dtype=cupy.uint8)
    y = cupy.empty_like(x)
    with k:
        for _ in range(60):
            cupy.copyto(y, x)
    ms = timed_copies(asis, [a])
    k.synchronize()
    print(f"  replay kernel : {useful / ms / 1e6:.1f} GB/s while a 1 GiB device copy loop runs", flush=True)
    del x, y
    stop = threading.Event()
    src = [np.ones(256 << 20, np.uint8) for _ in range(4)]
    dst = [np.empty(256 << 20, np.uint8) for _ in range(4)]

    def churn(i: int) -> None:
        while not stop.is_set():
            np.copyto(dst[i], src[i])

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    ms = min(timed_copies(asis, [a]) for _ in range(3))
    stop.set()
    for t in threads:
        t.join()
    print(f"  replay hostmem: {useful / ms / 1e6:.1f} GB/s while 4 host threads copy 256 MiB arrays", flush=True)


def probe_query(db: str, q, rec: Recorder) -> None:
    import cupy

    from hetdb.backend.gpu import copies
    from hetdb.cache.host_cache import existing_shared_host_cache

    con = hetdb.connect(db, device="gpu", create=False)
    con.sql(q.sql).arrow()  # host tier loaded, kernels compiled
    con.close()
    con = hetdb.connect(db, device="gpu", create=False)
    cupy.cuda.Device().synchronize()
    rec.groups = []
    rec.on = True
    # (the recorder sees cudaMemcpyAsync calls, in the plan's order: the replay sorts them itself)
    batched, ordered, copies.BATCH_CALL, copies.SORTED = copies.BATCH_CALL, copies.SORTED, False, False
    t0 = time.perf_counter()
    try:
        con.sql(q.sql).arrow()
    finally:
        rec.on = False
        copies.BATCH_CALL, copies.SORTED = batched, ordered
    wall = (time.perf_counter() - t0) * 1e3
    cupy.cuda.Device().synchronize()
    con.close()
    tier = existing_shared_host_cache()
    text = q.sql.lower()
    cols = {k.column for k in tier._entries if k.column.lower() in text}
    print(f"{q.name}: warm run {wall:.1f} ms (recording copies); tier layout: {layout(tier, cols)}", flush=True)
    for i, g in enumerate(rec.groups):
        copies = g["copies"]
        if not copies:
            continue
        chunks = sorted({chunk_of(tier, s) for _, s, _ in copies})
        line = f"    {'loose' if g['loose'] else 'd'}{i}: {describe(copies)} chunks {chunks[:6]}{'...' if len(chunks) > 6 else ''}"
        if g["events"] is not None:
            ms = cupy.cuda.get_elapsed_time(*g["events"])
            line += f" in-query {ms:.2f} ms = {g['bytes'] / max(ms, 1e-9) / 1e6:.1f} GB/s"
            if g.get("first") is not None:  # (split: before its first data copy / from it to the end)
                pre = cupy.cuda.get_elapsed_time(g["events"][0], g["first"])
                line += f" (before the first data copy {pre:.2f} ms, copies {ms - pre:.2f} ms = " \
                        f"{g['bytes'] / max(ms - pre, 1e-9) / 1e6:.1f} GB/s)"
        print(line, flush=True)
    allc = [c for g in rec.groups for c in g["copies"]]
    print(f"  all: {describe(allc)}", flush=True)
    replay(rec.groups, tier)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q4.1")
    ap.add_argument("--only-copies", action="store_true", help="no sweep, source and numa sections")
    args = ap.parse_args()
    for step in (machine,) + (() if args.only_copies else (sweep,)):
        try:
            step()
        except Exception as e:  # noqa: BLE001 - a probe reports and goes on
            print(f"{step.__name__} failed: {type(e).__name__}: {e}", flush=True)
    rec = Recorder()
    for q in load_queries(args.suite, args.queries.split(",")):
        try:
            probe_query(args.db, q, rec)
        except Exception as e:  # noqa: BLE001
            import traceback

            print(f"{q.name} failed: {type(e).__name__}: {e}\n{traceback.format_exc()}", flush=True)
    if args.only_copies:
        return
    try:
        source_rates()
    except Exception as e:  # noqa: BLE001
        print(f"source failed: {type(e).__name__}: {e}", flush=True)
    try:
        numa()
    except Exception as e:  # noqa: BLE001
        print(f"numa failed: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
