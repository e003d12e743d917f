"""Running compiled pipelines on the GPU: argument marshalling, the hash-aggregation table of one
launch (sized optimistically, rerun with twice the slots when it overflows), and reading the groups
back as key and accumulator arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.backend.gpu.codegen.checked import ERR_WORDS, raise_if_overflowed
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_kernel import PL_BLOCK, PL_TILE, PipelineKernel
from hetdb.backend.gpu.codegen.pipeline_spec import PipelineSpec, ProbeStage
from hetdb.backend.gpu.codegen.runtime import I64_MAX, I64_MIN, compile_source, literal_values
from hetdb.column import Column
from hetdb.errors import HetdbError

MIN_SLOTS = 1 << 10
MAX_SLOTS = 1 << 30
LOAD = 0.7  # a launch whose groups fill more of its table reruns with twice the slots
_IDENTITY = {"fused::AccSumI64": 0, "fused::AccSumF64": 0, "fused::AccMinI64": I64_MAX,
             "fused::AccMaxI64": I64_MIN, "fused::AccMinF64": I64_MAX, "fused::AccMaxF64": I64_MIN}


# spec -> generated kernel: a spec is a value (equal specs generate the same text), so a repeated
# query does not generate (and hash for the module cache) its kernels again; runs keep their own
# CompiledPipeline objects (their launch state), only the text is shared
_GENERATED: dict[tuple[PipelineSpec, bool], PipelineKernel] = {}
_GENERATED_ENTRIES = 1024


def _generated(spec: PipelineSpec, paged: bool) -> PipelineKernel:
    try:
        hit = _GENERATED.get((spec, paged))
    except TypeError:  # a spec holding an unhashable literal: generate it every time
        return generate_pipeline(spec, paged)
    if hit is None:
        hit = generate_pipeline(spec, paged)  # (UnsupportedError: not cached, raised again next time)
        if len(_GENERATED) >= _GENERATED_ENTRIES:
            _GENERATED.pop(next(iter(_GENERATED)))
        _GENERATED[(spec, paged)] = hit
    return hit


@dataclass
class ProbeInput:
    """A finished join build as the kernel probes it: ``table`` a hashing.GpuJoinTable (None when
    no build row has a non-NULL key), ``valid_idx`` table row -> build row (None: identity),
    ``payload`` the build columns of the stage's payload, in order."""

    table: Any
    valid_idx: Any
    payload: list[Column]
    nonempty: bool
    has_null_key: bool
    rows: int = 0  # build rows (a join without keys matches each of them)


@dataclass
class Groups:
    """The groups of one launch: per key (values, validity or None), per accumulator its array."""

    keys: list[tuple[Any, Any]]
    accumulators: list[Any]
    num_groups: int


class CompiledPipeline:
    """A generated pipeline kernel; the module compiles (or loads from the disk cache) at first use."""

    def __init__(self, spec: PipelineSpec, paged: bool = False) -> None:
        self.spec = spec
        self.paged = paged  # reads a page table (pipeline_paged.py) instead of one batch's columns
        self.kernel: PipelineKernel = _generated(spec, paged)
        self._function: Any = None
        self._module: Any = None
        self._probe_args: tuple[list, list[Any]] | None = None  # (the probes list, its arguments)
        self._literals: tuple | None = None  # the literals' launch arguments, made at the first launch
        self.slots_hint = MIN_SLOTS
        # the hidden accumulators of DOUBLE keys' first signs (pipeline_gen: part "zero_sign<k>")
        self.zero_signs = any(a.part.startswith("zero_sign") for a in self.kernel.accumulators)

    @property
    def source(self) -> str:
        return self.kernel.full_source()

    def function(self) -> Any:
        if self._function is None:
            self._module = compile_source(self.source, "pipeline.cu")
            self._function = self._module.function(self.kernel.name)
        return self._function

    def literal_args(self) -> tuple:
        """The launch arguments of this spec's literal values (the kernel's last parameters)."""
        if self._literals is None:
            self._literals = literal_values(self.kernel.literals)
        return self._literals

    def regroup(self, old: GroupTable, new: GroupTable) -> None:
        """Insert every group of ``old`` into the empty, larger ``new`` (pipeline.cuh pipe_regroup);
        ``new`` takes over ``old``'s error words."""
        import cupy

        from hetdb.backend.gpu.compile import launch

        self.function()
        fn = self._module.function("pipe_regroup")
        old_accs = cupy.asarray([a.data.ptr for a in old.accs] or [0], dtype=cupy.uint64)
        new_accs = cupy.asarray([a.data.ptr for a in new.accs] or [0], dtype=cupy.uint64)
        launch(fn, min(-(-old.slots // 256), 65536), 256,
               (old.state, old.keys, np.int64(old.slots), np.int32(len(self.kernel.group_keys)), new.state,
                new.keys, np.uint64(new.slots - 1), new.used, np.uint64(new.slots), new.overflow, old_accs,
                new_accs, np.int32(len(old.accs))))
        new.errors[...] = old.errors  # (device copies, ordered after old's launches: no sync)
        new.arith_err[...] = old.arith_err
        new.bound = old.bound

    def _args(self, columns: dict[str, Column], n: int, lookups: list[tuple],
              probes: list[ProbeInput]) -> list[Any]:
        import cupy

        args: list[Any] = []
        for inp in self.spec.inputs:
            col = columns[inp.cid]
            if inp.dtype.kind == "string" and not inp.dictionary and inp.codec == "plain":
                # offsets and UTF-8 bytes (a one-byte array keeps the pointer valid when empty)
                args.append(cupy.ascontiguousarray(col.offsets.astype(cupy.int64, copy=False)))
                args.append(col.chars if int(col.chars.shape[0]) else cupy.zeros(1, dtype=cupy.uint8))
            elif inp.codec == "plain":
                args.append(cupy.ascontiguousarray(col.data))
            else:  # a compressed page the kernel decodes in place (backend/gpu/encoded.py)
                page = col.device_page
                if page is None or page.codec != inp.codec or page.n != n:
                    raise ValueError(f"input {inp.cid} is not a whole {inp.codec} page of {n} rows")
                args.append(page.data)
            if inp.nullable:
                args.append(np.uint64(0) if col.validity is None else cupy.ascontiguousarray(col.validity))
        args += [np.int64(n), np.int64(-(-n // PL_TILE))]
        return args + self.tail_args(lookups, probes)

    def tail_args(self, lookups: list[tuple], probes: list[ProbeInput]) -> list[Any]:
        """The launch arguments after the inputs: dictionary lookups, then the build sides."""
        args: list[Any] = []
        if len(lookups) != len(self.kernel.lookups):
            raise ValueError(f"kernel has {len(self.kernel.lookups)} dictionary lookups, got {len(lookups)}")
        for entry in lookups:  # (values, valid), or a build's table of strings (Lookup.plain)
            args += list(entry)
        # the build sides are the same for every batch of a run (one ``probes`` list): marshalled once
        cached = self._probe_args
        if cached is None or cached[0] is not probes:
            cached = self._probe_args = (probes, self._build_args(probes))
        return args + cached[1]

    def _build_args(self, probes: list[ProbeInput]) -> list[Any]:
        import cupy

        args: list[Any] = []
        stages = [s for s in self.spec.stages if isinstance(s, ProbeStage)]
        if len(probes) != len(stages):
            raise ValueError(f"kernel has {len(stages)} probes, got {len(probes)} build sides")
        empty = cupy.full(1, -1, dtype=cupy.int64) if stages else None  # (a launch: only for probes)
        for stage, pr in zip(stages, probes):
            t = pr.table
            if not stage.keys:  # every build row matches: the kernel reads only their number
                args += [empty, np.uint64(0), empty, np.int64(pr.rows), empty.view(cupy.uint64), empty, empty,
                         empty, np.uint64(0)]
            elif t is None:
                args += [empty, np.uint64(0), empty, np.int64(0), empty.view(cupy.uint64), empty, empty,
                         empty, np.uint64(0)]
            else:
                args += [t.slots, np.uint64(t.capacity - 1), t.keys, np.int64(t.num_rows), t.hashes,
                         t.slot_start, t.slot_count, t.slot_rows,
                         np.uint64(0) if pr.valid_idx is None else pr.valid_idx.astype(cupy.int64)]
            args += [np.int32(1 if pr.nonempty else 0), np.int32(1 if pr.has_null_key else 0)]
            if len(pr.payload) != len(stage.payload):
                raise ValueError(f"probe declares {len(stage.payload)} payload columns, got {len(pr.payload)}")
            for inp, col in zip(stage.payload, pr.payload):
                if inp.build_row:
                    continue
                args.append(cupy.ascontiguousarray(col.data))
                if inp.nullable:
                    args.append(np.uint64(0) if col.validity is None else cupy.ascontiguousarray(col.validity))
        return args

    def aggregate(self, columns: dict[str, Column], n: int, lookups: list[tuple],
                  probes: list[ProbeInput]) -> Groups:
        """Run the pipeline over ``n`` rows and return its groups (one launch; reruns with a larger
        table when the groups did not fit)."""
        base = self._args(columns, n, lookups, probes)
        slots = self.slots_hint
        while True:
            table = self.new_table(slots)
            self.launch_into(table, base, n)
            if not self.check(table):
                break
            if slots >= MAX_SLOTS:
                raise HetdbError(f"a compiled aggregation has more than {int(MAX_SLOTS * LOAD)} groups in one "
                                 "batch; use a smaller batch_rows")
            # one rerun at most when no probe expands rows: a batch of n rows has at most n groups
            slots = min(MAX_SLOTS, max(slots * 2, 1 << max(0, int(n / LOAD)).bit_length()))
            self.slots_hint = max(self.slots_hint, slots)
        return self.groups(table)

    # ---- one hash table over many launches (GroupTable) ----------------------------------------
    def group_keys_growable(self) -> bool:
        """Whether pipe_regroup can move this kernel's groups (at most 16 keys, at least one)."""
        return 0 < len(self.kernel.group_keys) <= 16

    def table_bytes(self, slots: int) -> int:
        return slots * (4 + 8 * (len(self.kernel.group_keys) + 1) + 8 * len(self.kernel.accumulators))

    def new_table(self, slots: int) -> GroupTable:
        import cupy

        nk = len(self.kernel.group_keys)
        # used, overflow, errors and arith_err in one buffer: ``check`` reads them back in one copy
        words = cupy.zeros(3 + ERR_WORDS, dtype=cupy.uint64)
        return GroupTable(slots, cupy.zeros(slots, dtype=cupy.int32), cupy.empty((nk + 1) * slots, dtype=cupy.int64),
                          words[0:1], words[1:2], words[2:3], words[3:],
                          [cupy.full(slots, _IDENTITY[a.acc], dtype=cupy.int64) for a in self.kernel.accumulators],
                          words=words)

    def reset(self, table: GroupTable) -> None:
        """Empty ``table`` for the next launches (its arrays are kept)."""
        table.state.fill(0)
        table.used.fill(0)
        for a, arr in zip(self.kernel.accumulators, table.accs):
            arr.fill(_IDENTITY[a.acc])
        table.bound = 0

    def launch_into(self, table: GroupTable, base: list[Any], n: int, tiles: int | None = None,
                    row0: int = 0) -> None:
        """Aggregate ``n`` rows (``base``: the ``_args`` of a batch, or of a page table with its
        ``tiles``) into ``table``; no sync. ``row0``: the rows of the earlier launches into
        ``table`` (a DOUBLE key's {-0.0, 0.0} group keeps the sign of its first row)."""
        from hetdb.backend.gpu.compile import launch

        tiles = -(-n // PL_TILE) if tiles is None else tiles
        if tiles:
            tail = (np.int64(row0),) if self.zero_signs else ()
            launch(self.function(), min(tiles, 65536), PL_BLOCK,
                   (*base, table.state, table.keys, np.uint64(table.slots - 1), table.used,
                    np.uint64(int(table.slots * LOAD)), table.overflow, *table.accs, table.errors, table.arith_err,
                    *tail, *self.literal_args()))

    def check(self, table: GroupTable) -> bool:
        """Raise what the launches into ``table`` reported (overflowing arithmetic, a scalar subquery
        with several rows); True when groups did not fit (the launches must be rerun)."""
        host = table.words.get()
        raise_if_overflowed(host[3:])
        if int(host[2]):
            raise HetdbError("a scalar subquery returned more than one row for one outer row "
                             "(DuckDB reports: More than one row returned by a subquery used as an "
                             "expression); add LIMIT 1 or an aggregate")
        return bool(int(host[1]))

    def groups(self, table: GroupTable) -> Groups:
        """The groups ``table`` holds, as key and accumulator arrays."""
        import cupy

        nk = len(self.kernel.group_keys)
        occupied = cupy.flatnonzero(table.state == 2)
        g = int(occupied.shape[0])
        kmat = table.keys.reshape(nk + 1, table.slots)[:, occupied]
        out_keys = []
        # (one read back for the usual case of no NULL key at all, not one per key)
        nulls = nk > 1 and bool((kmat[nk] != 0).any())
        for k, key in enumerate(self.kernel.group_keys):
            valid = ((kmat[nk] >> k) & 1) == 0
            bits = kmat[k] if key.build_rows_of is not None else _decode_bits(cupy, kmat[k], key.dtype)
            some_null = (nulls or nk == 1) and not bool(valid.all())
            out_keys.append((bits, valid if some_null else None))
        values = []
        for a, arr in zip(self.kernel.accumulators, table.accs):
            v = arr[occupied]
            if a.part.startswith("zero_sign"):
                k = int(a.part[len("zero_sign"):])
                first_negative = (v != I64_MAX) & ((v & 1) == 1)
                out_keys[k] = (cupy.where(first_negative, -0.0, out_keys[k][0]), out_keys[k][1])
            if a.kind == "f64":
                v = v.view(cupy.float64)
            elif a.kind == "order_f64":
                v = cupy.where(v >= 0, v, v ^ I64_MAX).view(cupy.float64)
            values.append(v)
        return Groups(out_keys, values, g)


@dataclass
class GroupTable:
    """The device hash table of a compiled aggregation (``state``/``keys``/accumulators of
    ``slots`` slots, the launch counters), reused by the launches of many batches."""

    slots: int
    state: Any
    keys: Any
    used: Any
    overflow: Any
    errors: Any
    arith_err: Any
    accs: list[Any]
    bound: int = 0  # groups the launches since the last reset may have inserted (host-side bound)
    words: Any = None  # the buffer of used, overflow, errors and arith_err (in that order)


class GroupAccumulator:
    """Batches of one compiled aggregation summed into one device hash table across launches, so a
    batch costs one launch (no table allocation, group extraction and partial-state merge per
    batch). Room is guaranteed before each launch — a batch of n rows adds at most ``n * expand``
    groups (``expand``: the largest number of matches a row can expand into) — so no launch
    overflows; when the room runs out the table grows (its groups move into one with at least twice
    the slots, ``pipe_regroup``) while ``reservation`` (the device memory budget: try_grow/shrink of
    the table's bytes) allows, else the groups are handed out (``add`` returns them) and the table
    starts again empty. Growing keeps each group in one partial state (TPC-H q18: 15M groups), so the
    aggregation has no partial states to merge."""

    def __init__(self, pipeline: CompiledPipeline, table: GroupTable, expand: int, reservation: Any = None) -> None:
        self.pipeline, self.table, self.expand = pipeline, table, expand
        self.reservation = reservation
        self.launches = 0
        self.rows = 0  # rows added so far (their positions order the first rows of groups)
        self.grown = 0  # times the table grew

    @staticmethod
    def slots_for(batch_rows: int, expand: int) -> int:
        """Slots for two batches' worth of new groups at the table's load factor."""
        return 1 << max(10, int(2 * batch_rows * expand / LOAD)).bit_length()

    def add(self, columns: dict[str, Column], n: int, lookups: list[tuple],
            probes: list[ProbeInput]) -> Groups | None:
        """Aggregate a batch; the groups held so far when the table had to be emptied first."""
        need = n * self.expand
        out = None
        if not self.room(need):
            out = self.take()
            if not self.room(need):
                raise ValueError(f"a batch of {n} rows needs more than the table's {self.table.slots} slots")
        t = self.table
        self.pipeline.launch_into(t, self.pipeline._args(columns, n, lookups, probes), n, row0=self.rows)
        t.bound += need
        self.launches += 1
        self.rows += n
        return out

    def room(self, need: int) -> bool:
        """Whether ``need`` more groups fit (after growing the table if it must and may)."""
        t = self.table
        limit = int(t.slots * LOAD)
        if t.bound + need <= limit:
            return True
        t.bound = int(t.used[0])  # what was really inserted (one sync)
        return t.bound + need <= limit or self._grow(t.bound + need)

    def _grow(self, groups: int) -> bool:
        t, p = self.table, self.pipeline
        slots = 2 * t.slots
        while int(slots * LOAD) < groups:
            slots *= 2
        if self.reservation is None or slots > MAX_SLOTS or not p.group_keys_growable() \
                or not self.reservation.try_grow(p.table_bytes(slots)):
            return False
        new = p.new_table(slots)
        p.regroup(t, new)
        self.table = new
        self.reservation.shrink(p.table_bytes(t.slots))
        self.grown += 1
        return True

    def take(self) -> Groups | None:
        """The groups held (None when no batch was added since the last take), table emptied."""
        if not self.launches:
            return None
        if self.pipeline.check(self.table):
            raise HetdbError("internal error: a compiled aggregation's table overflowed although its "
                             "room was reserved")
        groups = self.pipeline.groups(self.table)
        self.pipeline.reset(self.table)
        self.launches = 0
        return groups


def _decode_bits(xp: Any, bits: Any, dtype: Any) -> Any:
    """Values of type ``dtype`` from their normalised key bits (common.cuh key_bits)."""
    kind = dtype.kind
    if kind == "float64":
        return bits.view(xp.float64)
    if kind == "bool":
        return bits != 0
    if kind == "string":
        return bits.astype(xp.int32)  # dictionary codes
    return bits.astype(dtype.numpy_dtype)


@dataclass
class Selected:
    """Rows that came out of a materializing pipeline, in (row, build rows) order: the input row,
    the build row per expanding probe (-1: no match of a left join) and per mark 0/1/2 (NULL)."""

    rows: Any
    build_rows: dict[int, Any]
    marks: dict[int, Any]


def select(pipeline: CompiledPipeline, columns: dict[str, Column], n: int, lookups: list[tuple],
           probes: list[ProbeInput], unique_rows: bool = False) -> Selected:
    """Run a materializing pipeline over ``n`` rows (one launch; once more with the exact output size
    when matches expanded past the first guess). ``unique_rows``: no probe expands a row (each row
    comes out at most once), so ordering by row alone restores the operators' order."""
    return run_select(pipeline, pipeline._args(columns, n, lookups, probes), n, -(-n // PL_TILE), max(n, 1),
                      unique_rows)


def run_select(pipeline: CompiledPipeline, base: list[Any], n: int, tiles: int, cap: int,
               unique_rows: bool) -> Selected:
    """``select`` over launch arguments ``base`` (of a batch or a page table: pipeline_paged.py) of
    ``n`` rows in ``tiles`` tiles, with room for ``cap`` output rows at first."""
    import cupy

    from hetdb.backend.gpu.compile import launch

    k = pipeline.kernel
    cap = max(cap, 1)
    while True:
        rows = cupy.empty(cap, dtype=cupy.int64)
        brows = {p: cupy.empty(cap, dtype=cupy.int64) for p in k.row_outputs}
        marks = {p: cupy.empty(cap, dtype=cupy.int8) for p in k.mark_outputs}
        # output count, scalar-subquery errors and arith_err in one buffer: one copy back per launch
        words = cupy.zeros(2 + ERR_WORDS, dtype=cupy.uint64)
        if tiles:
            launch(pipeline.function(), min(tiles, 65536), PL_BLOCK,
                   (*base, rows, np.uint64(cap), words[0:1], *brows.values(), *marks.values(), words[1:2],
                    words[2:], *pipeline.literal_args()))
        host = words.get()
        raise_if_overflowed(host[2:])
        if int(host[1]):
            raise HetdbError("a scalar subquery returned more than one row for one outer row "
                             "(DuckDB reports: More than one row returned by a subquery used as an "
                             "expression); add LIMIT 1 or an aggregate")
        total = int(host[0])
        if total <= cap:
            break
        cap = total
    rows = rows[:total]
    brows = {p: b[:total] for p, b in brows.items()}
    marks = {p: m[:total] for p, m in marks.items()}
    # warps claim output positions in whatever order they run: restore the operators' row order
    # (input row, then build row of each probe, ascending)
    if total > 1:
        if brows and not unique_rows:
            order = cupy.lexsort(cupy.stack([*reversed(list(brows.values())), rows]))
        else:
            order = cupy.argsort(rows)
        rows = rows[order]
        brows = {p: b[order] for p, b in brows.items()}
        marks = {p: m[order] for p, m in marks.items()}
    return Selected(rows, brows, marks)


class MarkRun:
    """The launches of a pipeline ending in a right_semi / right_anti probe: each batch sets
    ``marked[build row] = 1`` (one byte per build row, the join operator's own flags) for every build
    row it matches; errors are read back once, in ``finish``, not per batch."""

    def __init__(self, pipeline: CompiledPipeline, marked: Any) -> None:
        import cupy

        if marked.dtype != cupy.bool_ or not marked.flags.c_contiguous:
            raise ValueError("the build rows' marks must be a contiguous bool array")
        self.pipeline, self.marked = pipeline, marked
        self.errors = cupy.zeros(1, dtype=cupy.uint64)
        self.arith_err = cupy.zeros(ERR_WORDS, dtype=cupy.uint64)

    def add(self, columns: dict[str, Column], n: int, lookups: list[tuple],
            probes: list[ProbeInput]) -> None:
        from hetdb.backend.gpu.compile import launch

        tiles = -(-n // PL_TILE)
        if tiles:
            launch(self.pipeline.function(), min(tiles, 65536), PL_BLOCK,
                   (*self.pipeline._args(columns, n, lookups, probes), self.marked, self.errors, self.arith_err,
                    *self.pipeline.literal_args()))

    def finish(self) -> None:
        """Raise what the launches reported (overflowing arithmetic, a scalar subquery with several rows)."""
        raise_if_overflowed(self.arith_err.get())
        if int(self.errors[0]):
            raise HetdbError("a scalar subquery returned more than one row for one outer row "
                             "(DuckDB reports: More than one row returned by a subquery used as an "
                             "expression); add LIMIT 1 or an aggregate")
