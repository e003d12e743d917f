"""Running fused pipelines: NVRTC compilation of generated source (cached on disk by a hash of the
source), launches, and turning accumulators back into per-group results (dense-key build tables:
dense_tables.py).

Aggregation state lives across batches, so a pipeline can consume a table row group by row group as
PageStreamer delivers it (``new_state`` / ``consume`` / ``finish``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hetdb.backend.gpu.codegen.checked import ERR_WORDS, raise_if_overflowed
from hetdb.backend.gpu.codegen.dense_tables import (  # noqa: F401 (the runtime's names for them)
    DENSE_MAX_SLOTS,
    I64_MAX,
    I64_MIN,
    DenseJoinTable,
    _array_module,
    _host,
    dense_build,
    domain_of,
)
from hetdb.backend.gpu.codegen.expr_cuda import LiteralParam
from hetdb.backend.gpu.codegen.generate import FP_ITEMS, KernelSource, generate  # noqa: F401 (the runtime's name for it)
from hetdb.backend.gpu.codegen.spec import AGGREGATE, PAGES_ANY, PAGES_PLAIN, FusedPipelineSpec, page_class
from hetdb.backend.gpu.memory import pinned_empty
from hetdb.backend.gpu.upload import upload_pinned
from hetdb.codec.encodings import CODEC_IDS
from hetdb.column import Column
from hetdb.errors import UnsupportedError

MAX_GROUPS = 1 << 26  # (codegen/groups.py MAX_WIDE_GROUPS)
HOST_FINISH_BYTES = 1 << 20  # accumulators finish() reads back whole, to find the non-empty groups on the host
SHARED_BYTES = 48 * 1024      # static limit for dynamic shared memory without an opt-in attribute
DECODE_SMEM_BYTES = (1024 + 32) * 8  # static shared memory of an encoded spec (HETDB_DECODE_SMEM_I64)
# local-memory bytes per thread a register cap (spec.min_blocks) may cost: past them the kernel is
# compiled without the cap (s14's decode-scan kernels at 12 blocks per SM spilled 8-32 bytes and
# still ran 1.3-1.7x faster than uncapped)
MAX_SPILL_BYTES = 32
# launches over page tables use the kernel variant of their pages' encodings (FusedPipeline.variant);
# HETDB_FUSED_PAGE_VARIANTS=0 (or False here, at run time): the spec's kernel for any encoding (A/B)
PAGE_VARIANTS = os.environ.get("HETDB_FUSED_PAGE_VARIANTS", "1") not in ("0", "")
_IDENTITY = {"fused::AccSumI64": 0, "fused::AccSumF64": 0, "fused::AccMinI64": I64_MAX,
             "fused::AccMaxI64": I64_MIN, "fused::AccMinF64": I64_MAX, "fused::AccMaxF64": I64_MIN}


# ---- compilation ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def compile_source(source: str, filename: str = "fused.cu") -> Any:
    """A CompiledModule of ``source`` for the current device, from the disk cache when present."""
    import cupy

    from hetdb.backend.gpu import compile as C

    cc = cupy.cuda.Device().compute_capability
    nvrtc = C._nvrtc()
    key = C.cache_key(source, C.DEFAULT_OPTIONS, (), cc, tuple(nvrtc.getVersion()))
    cubin_path = C.cache_dir() / f"{Path(filename).stem}-{key[:32]}.cubin"
    if cubin_path.is_file():
        C.count("disk")
        return C.CompiledModule(cupy.RawModule(path=str(cubin_path)), {}, cubin_path)
    try:
        cubin = _compile_with_pch(nvrtc, source, filename, cc)
        if cubin is None:
            cubin, _ = C._compile_cubin(nvrtc, source, filename, C.DEFAULT_OPTIONS, (), cc)
    except (AttributeError, RuntimeError):
        C.count("nvrtc")
        return C.CompiledModule(cupy.RawModule(code=source, options=C.DEFAULT_OPTIONS), {}, None)
    C._write_atomically(cubin_path, cubin)
    C._write_atomically(cubin_path.with_suffix(".json"), json.dumps({}).encode())
    return C.CompiledModule(cupy.RawModule(path=str(cubin_path)), {}, cubin_path)


_PCH_REFUSED: list[str] = []  # why NVRTC refused the PCH compile, once (then the inlined text only)
PCH_COMPILES = [0]  # generated kernels this process compiled with the precompiled header


def _compile_with_pch(nvrtc: Any, source: str, filename: str, cc: str) -> bytes | None:
    """The cubin of ``source`` compiled with NVRTC's automatic precompiled header (compile.pch_program),
    or None when that is off, not for this source, or NVRTC refused it once in this process (the
    caller compiles the inlined text)."""
    from hetdb.backend.gpu import compile as C
    from hetdb.errors import HetdbError

    program = None if _PCH_REFUSED else C.pch_program(source)
    if program is None:
        return None
    text, options = program
    try:
        cubin = C._compile_cubin(nvrtc, text, filename, (*C.DEFAULT_OPTIONS, *options), (), cc)[0]
        PCH_COMPILES[0] += 1
        return cubin
    except HetdbError as e:
        _PCH_REFUSED.append(str(e)[:300])
        return None


_PATTERNS: dict[bytes, Any] = {}  # LIKE pattern bytes -> device array (a kernel argument)
_PATTERN_ENTRIES = 256
_PATTERN_BYTES = [0]  # device bytes (pool blocks) of the arrays in _PATTERNS
_PATTERN_LOCK = threading.Lock()


def kept_pattern_bytes() -> int:
    """Device bytes the LIKE patterns kept for launches hold (``literal_values``): process-wide and
    kept across queries, like cached pages, so the engine's after-query leak check counts them as
    kept (exec/device.py), not as left behind by the query that first used a pattern (TPC-H q13's
    18-byte '%special%requests%': a 512-byte pool block 'leaked' by the process's first q13)."""
    return _PATTERN_BYTES[0]


def _block_bytes(arr: Any) -> int:
    """Bytes of ``arr``'s pool block (rounded as allocated); its size where it has none."""
    mem = getattr(getattr(arr, "data", None), "mem", None)
    return int(mem.size) if mem is not None else int(arr.nbytes)


def _pattern(value: bytes) -> Any:
    import cupy

    with _PATTERN_LOCK:
        arr = _PATTERNS.get(value)
        if arr is None:
            if len(_PATTERNS) >= _PATTERN_ENTRIES:
                _PATTERN_BYTES[0] -= _block_bytes(_PATTERNS.pop(next(iter(_PATTERNS))))
            arr = _PATTERNS[value] = cupy.asarray(np.frombuffer(value or b"\0", dtype=np.uint8))
            _PATTERN_BYTES[0] += _block_bytes(arr)
    return arr


def literal_values(literals: tuple[LiteralParam, ...]) -> tuple:
    """Launch arguments of a kernel's literal parameters (expr_cuda.literal_params): numbers as
    NumPy scalars of the parameter's C++ type, a LIKE pattern's bytes as a device array (kept per
    pattern: one copy to the device per distinct pattern, not per launch; ``kept_pattern_bytes``)."""
    out: list[Any] = []
    for lit in literals:
        if isinstance(lit.value, bytes):
            arr = _PATTERNS.get(lit.value)
            out.append(arr if arr is not None else _pattern(lit.value))
        elif lit.ctype == "double":
            out.append(np.float64(lit.value))
        elif lit.ctype == "int":
            out.append(np.int32(lit.value))
        elif lit.ctype == "long long":
            out.append(np.int64(lit.value))
        else:
            raise ValueError(f"literal parameter {lit.name} of C++ type {lit.ctype!r} has no launch argument")
    return tuple(out)


# ---- results --------------------------------------------------------------------------------------
@dataclass
class AggregateResult:
    """Non-empty groups in group-index order (lexicographic by key): key values per group key,
    one array per aggregate, rows per group."""

    keys: list[Any]
    values: list[Any]
    counts: Any
    groups: Any = None  # (``finish`` on the host) the groups' indices in the dense domain, ascending

    @property
    def num_groups(self) -> int:
        return int(self.counts.shape[0])


@dataclass
class Selection:
    """Rows (ascending int64) that passed every filter and probe, and per probe the matched build row."""

    rows: Any
    build_rows: list[Any]


@dataclass
class PageTable:
    """Row groups of a table for one launch (generate.py's page-table layout) in host memory;
    ``keep`` holds the arrays its pointers point into."""

    host: Any
    num_pages: int
    num_tiles: int
    num_rows: int
    keep: list[Any] = field(default_factory=list, repr=False)
    # (device copy, CUDA event after its copy) from the first launch on: a table kept between runs
    # (fusion_run keeps it with the device cache's entries) is copied to the device once, not per launch
    device: Any = field(default=None, repr=False)
    # per input, the encodings of its pages here (spec.PAGES_*; empty: a spec without ``encoded``):
    # the kernel variant that reads them (FusedPipeline.variant)
    codecs: tuple[str, ...] = ()

    def device_arrays(self) -> list[Any]:
        """The device memory this table holds (its device copy), for the device cache's accounting."""
        return [] if self.device is None else [self.device[0]]


@dataclass
class AggregateState:
    domains: list[tuple[int, int]]
    sizes: list[int]
    strides: list[int]
    num_groups: int
    accumulators: list[Any]
    domain_errors: Any
    arith_err: Any = None          # codegen/checked.py: the first overflowing operands, if any
    page_tables: list[Any] = field(default_factory=list)  # device copies of launched page tables
    buffer: Any = None             # [domain errors, arith_err, accumulator 0, 1, ...] (int64), one array
    launch: Any = None             # (function, grid, block, arguments, shared bytes) of the last launch into it


# ---- pipelines ------------------------------------------------------------------------------------
class FusedPipeline:
    """A compiled fused pipeline (the module compiles on first launch)."""

    def __init__(self, spec: FusedPipelineSpec, kernel: KernelSource) -> None:
        self.spec = spec
        self.kernel = kernel
        self.block = spec.block              # threads per block
        self.tile = spec.block * spec.items  # rows per tile
        self._function: Any = None
        # local bytes per thread of the capped compile (spec.min_blocks; generate.py leaves kernels
        # with tile decoders uncapped), None until compiled; when over MAX_SPILL_BYTES the uncapped
        # kernel runs instead (``capped`` False)
        self.spill_bytes: int | None = None
        self.capped = bool(spec.min_blocks) and not spec.decodes_tiles
        self._registers: int | None = None  # per thread, once loaded (the launch's occupancy)
        self._shapes: dict[tuple, tuple] = {}  # new_state's domains -> (sizes, groups, strides)
        self._literals: tuple | None = None  # the literals' launch arguments, made at the first launch
        self._variants: dict[tuple[str, ...], FusedPipeline] = {}  # page encodings -> kernel reading them

    @property
    def source(self) -> str:
        return self.kernel.full_source()

    def literal_args(self) -> tuple:
        """The launch arguments of this spec's literal values (the kernel's last parameters)."""
        if self._literals is None:
            self._literals = literal_values(self.kernel.literals)
        return self._literals

    def function(self) -> Any:
        # kept: a pipeline launches once per row group, and the lookup hashes the whole source
        if self._function is None:
            fn = compile_source(self.source).function(self.kernel.name)
            if self.capped:
                self.spill_bytes = _local_bytes(fn)
                if self.spill_bytes > MAX_SPILL_BYTES:
                    # the register cap spilled too much: the same kernel without it (same arguments)
                    fn = compile_fused_pipeline(dataclasses.replace(self.spec, min_blocks=0)).function()
                    self.capped = False
            self._function = fn
        return self._function

    def variant(self, codecs: tuple[str, ...]) -> FusedPipeline:
        """The pipeline of this spec for pages in the encodings ``codecs`` (per input, spec.PAGES_*;
        a page table's ``codecs``): the same arguments, accumulators and literals, without the
        decoders no page needs (fewer registers, more resident blocks)."""
        if all(c == PAGES_ANY for c in codecs):
            codecs = ()  # (the spec's own kernel reads any encoding)
        if not self.spec.encoded or codecs == self.spec.input_codecs:
            return self
        got = self._variants.get(codecs)
        if got is None:
            got = self._variants[codecs] = compile_fused_pipeline(dataclasses.replace(self.spec, input_codecs=codecs))
        return got

    # ---- inputs ----------------------------------------------------------------------------------
    def batch_unfusable_reason(self, columns: dict[str, Any]) -> str | None:
        """None if this batch can run fused: every input present, of its dtype, without NULLs."""
        for cid, dtype in self.spec.inputs:
            col = columns.get(cid)
            if col is None:
                return f"input column {cid} is missing"
            if isinstance(col, Column):
                if col.validity is not None:
                    return f"column {cid} has NULLs"
                page = getattr(col, "device_page", None)
                if page is not None and self.spec.encoded:  # decoded in the kernel
                    if page.dtype != dtype.numpy_dtype:
                        return f"column {cid} is not a {dtype.numpy_dtype} page"
                    continue
                col = col.data
            if col is None or np.dtype(col.dtype) != dtype.numpy_dtype:
                return f"column {cid} is not a {dtype.numpy_dtype} array"
        return None

    def _args(self, columns: dict[str, Any], tables: list[DenseJoinTable]) -> tuple[list[Any], int]:
        import cupy

        reason = self.batch_unfusable_reason(columns)
        if reason is not None:
            raise UnsupportedError(f"batch cannot run fused: {reason}")
        arrays = []
        for cid, _ in self.spec.inputs:
            col = columns[cid]
            arrays.append(cupy.ascontiguousarray(col.data if isinstance(col, Column) else col))
        n = int(arrays[0].shape[0]) if arrays else 0
        if any(int(a.shape[0]) != n for a in arrays):
            raise ValueError("input columns differ in length")
        # a flat batch: no page table (a null pointer), one tile per self.tile rows
        args: list[Any] = [*arrays, np.int64(n), np.uint64(0), np.int64(0), np.int64(-(-n // self.tile))]
        return self._probe_args(args, tables), n

    def _probe_args(self, args: list[Any], tables: list[DenseJoinTable]) -> list[Any]:
        if len(tables) != len(self.spec.probes):
            raise ValueError(f"pipeline has {len(self.spec.probes)} probes, got {len(tables)} build tables")
        for probe, table in zip(self.spec.probes, tables):
            if table.payload_columns != len(probe.payload):
                raise ValueError(f"build table has {table.payload_columns} payload columns, the probe "
                                 f"declares {len(probe.payload)}")
            if probe.form != "rows":
                args += [*(table.probe_arrays(f) for f in probe.form.split("_")), np.int64(table.lo),
                         np.int64(table.size)]
                continue
            args += [table.rows, np.int64(table.lo), np.int64(table.size)]
            for arr, (cid, dtype) in zip(table.keyed_payload() if probe.by_key else table.payload, probe.payload):
                if np.dtype(arr.dtype) != dtype.numpy_dtype:
                    raise ValueError(f"payload {cid} is {arr.dtype}, declared {dtype.numpy_dtype}")
                args.append(arr)
        return args

    def layout_page_table(self, parts: Any) -> PageTable | None:
        """``page_table`` of a paged delivery handed out as a ``paged_parts.PagedParts``, from its
        layout (a template per layout and kernel, the buffer's address added: no Column per page);
        None when its pages cannot run fused that way (an input missing, of another dtype, encoded
        pages for a kernel that reads none): the caller takes its Batches."""
        from hetdb.backend.gpu.paged_parts import layout_template

        layout = parts.layout
        columns = []
        for cid, dtype in self.spec.inputs:
            c = parts.index.get(cid)
            if c is None or layout.dtypes[c] != dtype.numpy_dtype:
                return None
            columns.append(c)
        key = (self.tile, bool(self.spec.encoded), tuple(columns))
        got = layout.templates.get(key, False)
        if got is False:
            got = layout.templates[key] = layout_template(layout, tuple(columns), self.tile, bool(self.spec.encoded))
        if got is None:
            return None
        template, pointers, num, tiles, rows, classes = got
        table = template.copy()
        table[pointers] += parts.base
        return PageTable(table, num, tiles, rows, [parts.buffer], codecs=classes)

    def page_table(self, pages: list[tuple[int, dict[str, Any]]]) -> PageTable:
        """The page table of ``pages`` ((rows, {cid: device array or Column}) per row group), for
        ``consume_pages``; UnsupportedError when a page cannot run fused (NULLs, another dtype). It
        is host memory only, so it may be kept as long as the arrays it points into live."""
        cids = [cid for cid, _ in self.spec.inputs]
        pages = [(int(rows), cols) for rows, cols in pages if int(rows) > 0]
        num = len(pages)
        encoded = self.spec.encoded
        table = np.zeros(3 * num + 1 + num * len(cids) * (2 if encoded else 1), dtype=np.int64)
        keep: list[Any] = []
        codecs: list[set[str]] = [set() for _ in cids]
        tile = row = 0
        for p, (rows, cols) in enumerate(pages):
            reason = self.batch_unfusable_reason(cols)
            if reason is not None:
                raise UnsupportedError(f"page cannot run fused: {reason}")
            table[p], table[num + 1 + p], table[2 * num + 1 + p] = tile, row, rows
            for k, cid in enumerate(cids):
                col = cols[cid]
                page = getattr(col, "device_page", None) if encoded else None
                if page is not None:  # kept compressed: the kernel decodes the data section in place
                    if page.n != rows:
                        raise UnsupportedError(f"page of column {cid} has {page.n} rows, not {rows}")
                    keep.append(page.data)
                    table[3 * num + 1 + p * len(cids) + k] = int(page.data.data.ptr)
                    # the codec id (nonzero): random-access pages are then touched only for
                    # flagged rows, even their header (fused_pipeline.cuh BlockLoadSelPage)
                    table[3 * num + 1 + num * len(cids) + p * len(cids) + k] = CODEC_IDS[page.codec]
                    codecs[k].add(page.codec)
                    continue
                arr = col.data if isinstance(col, Column) else col
                if int(arr.shape[0]) != rows or not arr.flags.c_contiguous:
                    raise UnsupportedError(f"page of column {cid} is not a contiguous array of {rows} rows")
                keep.append(arr)
                table[3 * num + 1 + p * len(cids) + k] = int(arr.data.ptr)
            tile += -(-rows // self.tile)
            row += rows
        table[num] = tile
        return PageTable(table, num, tile, row, keep,
                         codecs=tuple(page_class(c) for c in codecs) if encoded else ())

    def consume_pages(self, state: AggregateState, pages: PageTable, tables: list[DenseJoinTable]) -> None:
        """Add every row of a page table to ``state`` with one launch (asynchronously; the table's few
        bytes are copied to the device first)."""
        import cupy

        if pages.num_tiles == 0 or state.num_groups == 0:
            return
        stream = cupy.cuda.get_current_stream()
        if pages.device is None:
            # through pinned memory: a copy from pageable memory may wait for the stream's earlier work
            # (the delivery's copies), which would keep the host from queueing the next one meanwhile
            staged = pinned_empty(pages.host.shape, pages.host.dtype)
            staged[...] = pages.host
            table = upload_pinned(staged, stream).view(staged.dtype)  # (beside a scan's queued copies)
            done = cupy.cuda.Event(disable_timing=True)
            done.record(stream)
            pages.device = (table, done)
            state.page_tables.append((table, staged))  # both live until the launch has run
        else:
            table, done = pages.device
            stream.wait_event(done)  # (its copy may have gone out on another stream)
            state.page_tables.append((table, None))
        args: list[Any] = [np.uint64(0)] * len(self.spec.inputs)
        args += [np.int64(0), table, np.int64(pages.num_pages), np.int64(pages.num_tiles)]
        self.variant(pages.codecs if PAGE_VARIANTS else ())._launch_aggregate(state, self._probe_args(args, tables), pages.num_tiles)

    # ---- aggregation -----------------------------------------------------------------------------
    def new_state(self, domains: list[tuple[int, int]] | None = None) -> AggregateState:
        """Accumulators for groups over ``domains`` ((lo, hi) inclusive, one per group key)."""
        import cupy

        if self.spec.output != AGGREGATE:
            raise ValueError("new_state is for aggregate pipelines")
        domains = list(domains or [])
        if len(domains) != len(self.spec.group_keys):
            raise ValueError(f"{len(self.spec.group_keys)} group keys need as many domains, got {len(domains)}")
        key = tuple((int(lo), int(hi)) for lo, hi in domains)
        shape = self._shapes.get(key)  # (the same domains every run of a reused plan)
        if shape is None:
            sizes = [max(0, hi - lo + 1) for lo, hi in domains]
            num_groups = int(np.prod(sizes, dtype=object)) if sizes else 1
            if num_groups > MAX_GROUPS:
                raise UnsupportedError(f"{num_groups} dense groups exceed the fused limit of {MAX_GROUPS}")
            strides = [int(np.prod(sizes[k + 1:], dtype=object)) if k + 1 < len(sizes) else 1
                       for k in range(len(sizes))]
            if len(self._shapes) >= 64:
                self._shapes.clear()
            shape = self._shapes[key] = (sizes, num_groups, strides)
        sizes, num_groups, strides = shape
        sizes, strides = list(sizes), list(strides)
        # one buffer: the error words, then every accumulator, so finish reads them all in one copy
        g = max(num_groups, 1)
        head = 1 + ERR_WORDS
        buf = cupy.zeros(head + len(self.kernel.accumulators) * g, dtype=cupy.int64)
        accs = []
        for k, a in enumerate(self.kernel.accumulators):
            acc = buf[head + k * g:head + (k + 1) * g]
            if _IDENTITY[a.acc]:
                acc.fill(_IDENTITY[a.acc])
            accs.append(acc)
        words = buf[:head].view(cupy.uint64)
        return AggregateState(domains, sizes, strides, num_groups, accs, words[:1], words[1:], buffer=buf)

    def consume(self, state: AggregateState, columns: dict[str, Any], tables: list[DenseJoinTable]) -> None:
        """Add one batch's rows to ``state`` (asynchronously, on the current stream)."""

        if self.spec.encoded and any(getattr(c, "device_page", None) is not None for c in columns.values()):
            # compressed pages are read through a page table (it holds their per-page codec flags)
            cols = {cid: columns[cid] for cid, _ in self.spec.inputs}
            rows = len(next(iter(cols.values()))) if cols else 0
            self.consume_pages(state, self.page_table([(rows, cols)]), tables)
            return
        args, n = self._args(columns, tables)
        if n == 0 or state.num_groups == 0:
            return
        self._flat()._launch_aggregate(state, args, -(-n // self.tile))

    def _flat(self) -> FusedPipeline:
        """The pipeline launched over a flat batch (value arrays only): the plain variant of a spec
        that may read compressed pages (without its decoders' registers)."""
        if not self.spec.encoded or not PAGE_VARIANTS:
            return self
        return self.variant((PAGES_PLAIN,) * len(self.spec.inputs))

    def _launch_aggregate(self, state: AggregateState, args: list[Any], tiles: int) -> None:
        from hetdb.backend.gpu.compile import launch

        for (lo, _), size, stride in zip(state.domains, state.sizes, state.strides):
            args += [np.int64(lo), np.int64(size), np.int64(stride)]
        shared = len(state.accumulators) * state.num_groups * 8
        static = DECODE_SMEM_BYTES if self.spec.decodes_tiles else 0
        use_shared = shared + static <= SHARED_BYTES
        args += [np.int64(state.num_groups), np.int32(1 if use_shared else 0), *state.accumulators,
                 state.domain_errors, state.arith_err, *self.literal_args()]
        # Shared-memory pre-aggregation flushes every group once per block: enough blocks to fill the
        # device (as many as fit per SM), not one per tile; global atomics go grid-stride as before.
        blocks = min(tiles, self._resident(shared + static) if use_shared else 65536)
        # (kept with the state: exec/hot_replay.py launches it again into the same state, zeroed)
        call = state.launch = (self.function(), max(1, blocks), self.block, tuple(args), shared if use_shared else 0)
        launch(*call[:4], shared_mem=call[4])

    def _resident(self, shared_bytes: int) -> int:
        """Blocks of this kernel the device runs at once with ``shared_bytes`` of shared memory each."""
        if self._registers is None:
            self._registers = _registers(self.function())
        return _resident_blocks(shared_bytes, _device_id(), self._registers, self.block)

    @staticmethod
    def finishes_on_host(state: AggregateState) -> bool:
        """Whether ``finish`` finds the groups on the host (a small domain: its accumulators are
        copied whole), so it can hand them over there (``finish(state, host=True)``)."""
        return state.buffer is not None and int(state.buffer.nbytes) <= HOST_FINISH_BYTES

    def finish(self, state: AggregateState, host: bool = False, keys: bool = True) -> AggregateResult:
        """Per-group results of the non-empty groups; with ``host`` (only where ``finishes_on_host``)
        as host arrays, for a result the host takes next (no copy back to the device), and without
        ``keys`` (host only) no key values: the caller has them by the groups' indices
        (``AggregateResult.groups``)."""
        if self.finishes_on_host(state):
            return self._finish_on_host(state, host, keys)
        if host:
            raise ValueError("finish(host=True) of a domain too large to finish on the host")
        import cupy

        raise_if_overflowed(state.arith_err.get())
        if int(state.domain_errors[0]):
            raise ValueError(f"{int(state.domain_errors[0])} rows had a group key outside its domain "
                             f"{state.domains}")
        counts = state.accumulators[0][:state.num_groups]
        keys, values, counts, _ = self._non_empty_groups(state, counts, state.accumulators[1:], cupy)
        return AggregateResult(keys, values, counts)

    def _non_empty_groups(self, state: AggregateState, counts, accs, xp,
                          keys: bool = True) -> tuple[list, list, Any, Any]:
        """The keys (unless not ``keys``), final values, counts and indices of the groups with rows,
        from the dense slot counts and accumulators (``xp``: cupy on the device, numpy after
        finish's one copy to the host)."""
        groups = xp.flatnonzero(counts > 0)
        keys = [(groups // stride) % size + lo
                for (lo, _), size, stride in zip(state.domains, state.sizes, state.strides)] if keys else []
        values = []
        for acc, spec, arr in zip(self.kernel.accumulators[1:], self.spec.aggregates, accs):
            v = arr[groups]
            if acc.kind == "f64":
                v = v.view(xp.float64)
            elif acc.kind == "order_f64":
                v = xp.where(v >= 0, v, v ^ I64_MAX).view(xp.float64)
            elif spec.op in ("min", "max"):
                v = v.astype(spec.arg.dtype.numpy_dtype)
            values.append(v)
        return keys, values, counts[groups], groups

    def _finish_on_host(self, state: AggregateState, host: bool = False, with_keys: bool = True) -> AggregateResult:
        """finish for a small domain: the error words and accumulators come to the host in one copy
        (the query's one wait for its kernel), the non-empty groups are found there, and their keys,
        values and counts go back in one copy: two transfers instead of a wait per error word and a
        dozen small kernels, with a wait for the number of groups among them."""
        buf = state.buffer.get()
        head = 1 + ERR_WORDS
        words = buf[:head].view(np.uint64)
        raise_if_overflowed(words[1:])
        if int(words[0]):
            raise ValueError(f"{int(words[0])} rows had a group key outside its domain {state.domains}")
        accs = buf[head:].reshape(len(self.kernel.accumulators), max(state.num_groups, 1))[:, :state.num_groups]
        keys, values, counts, groups = self._non_empty_groups(state, accs[0], accs[1:], np, with_keys)
        out = [*keys, *values, counts]
        if not host:
            out = arrays_to_device(out)
            groups = None
        return AggregateResult(out[:len(keys)], out[len(keys):-1], out[-1], groups)

    def aggregate(self, columns: dict[str, Any], tables: list[DenseJoinTable],
                  domains: list[tuple[int, int]] | None = None) -> AggregateResult:
        """One batch, start to finish."""
        state = self.new_state(domains)
        self.consume(state, columns, tables)
        return self.finish(state)

    # ---- selection -------------------------------------------------------------------------------
    def select(self, columns: dict[str, Any], tables: list[DenseJoinTable]) -> Selection:
        """Indices of the rows that pass (ascending) and their matched build rows per probe."""
        import cupy

        from hetdb.backend.gpu.compile import launch

        if self.spec.output == AGGREGATE:
            raise ValueError("select is for selection pipelines")
        args, n = self._args(columns, tables)
        out_rows = cupy.empty(max(n, 1), dtype=cupy.int64)
        out_build = [cupy.empty(max(n, 1), dtype=cupy.int32) for _ in self.spec.probes]
        count = cupy.zeros(1, dtype=cupy.uint64)
        arith_err = cupy.zeros(ERR_WORDS, dtype=cupy.uint64)
        if n:
            launch(self._flat().function(), min(-(-n // self.tile), 65536), self.block,
                   (*args, out_rows, *out_build, count, arith_err, *self.literal_args()))
        raise_if_overflowed(arith_err.get())
        total = int(count[0])
        rows = out_rows[:total]
        # Blocks claim output ranges in whatever order they finish: restore row order.
        order = cupy.argsort(rows)
        return Selection(rows[order], [b[:total][order] for b in out_build])


_PIPELINES: dict[FusedPipelineSpec, FusedPipeline] = {}
_PIPELINE_CACHE_ENTRIES = 512


def compile_fused_pipeline(spec: FusedPipelineSpec) -> FusedPipeline:
    """Generate the kernel of ``spec`` (UnsupportedError with the reason when it is not fusable);
    the CUDA module is compiled, or loaded from the disk cache, at the first launch. Pipelines are
    kept per spec (a spec is a value: equal specs generate the same kernel), so a repeated query
    reuses the loaded kernel without generating or hashing source again."""
    try:
        hit = _PIPELINES.get(spec)
    except TypeError:  # a spec holding an unhashable literal: generate it every time
        return FusedPipeline(spec, generate(spec))
    if hit is not None:
        return hit
    pipeline = FusedPipeline(spec, generate(spec))
    if len(_PIPELINES) >= _PIPELINE_CACHE_ENTRIES:
        _PIPELINES.pop(next(iter(_PIPELINES)))
    _PIPELINES[spec] = pipeline
    return pipeline


def arrays_to_device(arrays: list[Any]) -> list[Any]:
    """Host arrays on the device with one upload: views of one device buffer, each at an 8-byte
    aligned offset, with its dtype and length (backend/gpu/upload.py: made by a kernel reading pinned
    staging, so it does not wait behind a scan's queued copies)."""
    from hetdb.backend.gpu.upload import to_device

    return to_device(arrays)


def _device_id() -> int:
    import cupy

    return int(cupy.cuda.Device().id)


def _local_bytes(fn: Any) -> int:
    """Local memory (register spills, local arrays) per thread of a loaded kernel (0 when this CuPy
    cannot say)."""
    try:
        return int(fn.local_size_bytes)
    except Exception:  # noqa: BLE001 - an older CuPy: the cap is kept
        return 0


def _registers(fn: Any) -> int:
    """Registers per thread of a loaded kernel (0 when this CuPy cannot say)."""
    try:
        return int(fn.num_regs)
    except Exception:  # noqa: BLE001 - an older CuPy: the occupancy estimate leaves registers out
        return 0


@functools.lru_cache(maxsize=64)
def _resident_blocks(shared_bytes: int, device_id: int, registers: int = 0, block: int = 128) -> int:
    """Blocks of ``block`` threads using ``shared_bytes`` of shared memory and ``registers`` per thread
    that device ``device_id`` runs at once: a grid-stride launch of more blocks than that runs them
    in waves, the last one leaving SMs idle (a kernel of 72 registers fits 7 blocks of 128 threads
    per SM, not the 16 the thread limit allows)."""
    import cupy

    attrs = cupy.cuda.Device(device_id).attributes
    sms = int(attrs.get("MultiProcessorCount", 132))
    per_sm_threads = int(attrs.get("MaxThreadsPerMultiProcessor", 2048)) // block
    smem = int(attrs.get("MaxSharedMemoryPerMultiprocessor", 228 * 1024)) - 1024
    per_sm = max(1, min(per_sm_threads, smem // max(shared_bytes + 1024, 1)))
    if registers > 0:
        # registers are allocated per warp in units of 256
        per_warp = -(-registers * 32 // 256) * 256
        regs_sm = int(attrs.get("MaxRegistersPerMultiprocessor", 65536))
        per_sm = max(1, min(per_sm, regs_sm // (per_warp * (block // 32))))
    return sms * per_sm
