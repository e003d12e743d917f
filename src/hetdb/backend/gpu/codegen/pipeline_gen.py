"""CUDA source of a compiled pipeline (pure Python: no CuPy, no GPU needed).

Produce/consume code generation in the style of HyPer, over Crystal's striped tiles: a block owns a
tile of PL_BLOCK * PL_ITEMS rows, thread t handles rows t, t + PL_BLOCK, ... (coalesced loads), and
for each row the generated body runs every stage in order. A filter that fails ``continue``s: at the
top level that drops the row, inside a probe's match loop it drops that match. Columns load at their
first use (after the filters before it), through pipe::PlainColumn, the decode abstraction of
pipeline.cuh (plain pages are the identity decode). An input kept compressed in device memory
(Input.codec) is read in place: const/for/dict pages through pipe::ConstColumn/ForColumn/DictColumn
(random access at first use, like a plain load), delta/rle pages by decoding the block's tile into
registers before the row loop (decode.cuh's tile loaders, shared memory pl_smem). Probes look the row's normalised key up in the
join build's hash table (hashing.GpuJoinTable): semi/anti/mark test for a match, inner/left/single
loop over the build rows of the key (non-unique builds expand in the kernel; a left join runs the
loop once with no build row when nothing matches). The sink inserts the group key into an
open-addressing hash table in device memory and updates its accumulators with atomics.

The kernel name is ``pipe_`` + a hash of the generated text; compile.py's cache keys the full source
(headers inlined), NVRTC options, architecture, NVRTC and hetdb versions.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from hetdb import types as T
from hetdb.backend.gpu.codegen.expr3 import Emitter, ExprError, Lookup, Val
from hetdb.backend.gpu.codegen.expr_cuda import ctype
from hetdb.backend.gpu.codegen.pipeline_keys import emit_string_key, string_table_params
from hetdb.backend.gpu.codegen.pipeline_spec import (
    AGG_OPS,
    PROBE_KINDS,
    RIGHT_KINDS,
    FilterStage,
    Input,
    MarkBuildSink,
    MaterializeSink,
    PipelineSpec,
    ProbeStage,
    ProjectStage,
)
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import Call, Cast, ColumnRef
from hetdb.plan.exprutil import substitute

PL_BLOCK = 128
PL_ITEMS = 4
PL_TILE = PL_BLOCK * PL_ITEMS
HEADER = "pipeline.cuh"
MAX_KEYS = 16
_NAME = "@KERNEL_NAME@"
_SOURCES: dict[str, str] = {}  # kernel name (a hash of its text) -> full source
_KEY_KINDS = ("int32", "int64", "date", "decimal", "timestamp", "float64", "bool")
_ORDERED = ("int32", "int64", "date", "decimal", "timestamp", "float64")
# codec -> the pipe:: column reading it by random access; TILE_CODECS decode a tile up front
_COLUMN_OF = {"plain": "PlainColumn", "const": "ConstColumn", "for": "ForColumn", "dict": "DictColumn"}
TILE_CODECS = {"delta": "load_tile_delta", "rle": "load_tile_rle"}
# codecs of a paged kernel's inputs whose pages may be kept compressed (pipe::PageColumn: the page
# table says per page whether it is a value array or an encoded data section): "paged" pages are
# plain or random-access (const, for, dict), "paged_tile" ones may also be delta or rle pages, whose
# tiles decode into registers before the row loop
PAGED_CODECS = ("paged", "paged_tile")


@dataclass(frozen=True)
class Accumulator:
    """One 8-byte accumulator per group slot: aggregate ``agg``'s state ``part`` ("sum", "cnt",
    "val"); ``acc`` the fused:: struct; ``kind`` how to read it ("i64", "f64", "order_f64")."""

    agg: int
    part: str
    acc: str
    kind: str


@dataclass(frozen=True)
class GroupKeyOut:
    """How group key ``k`` comes back: its SQL type and, for strings, the cid whose dictionary
    its codes index."""

    dtype: T.DataType
    dict_cid: str | None
    build_rows_of: str | None = None  # the values are build rows of this plain-string payload column
    expr: object | None = None        # the values are codes of dict_cid; the key is expr over them


@dataclass(frozen=True)
class PipelineKernel:
    name: str
    body: str
    lookups: tuple[Lookup, ...]
    accumulators: tuple[Accumulator, ...]
    group_keys: tuple[GroupKeyOut, ...]
    probe_payloads: tuple[tuple[Input, ...], ...]   # per probe, the payload columns passed in order
    row_outputs: tuple[int, ...] = ()    # materialize: stage indexes whose build row is written
    mark_outputs: tuple[int, ...] = ()   # materialize: stage indexes whose mark is written

    def full_source(self) -> str:
        """pipeline.cuh (headers inlined) and the kernel: made once per kernel, so the module cache's
        look-up hashes one string object (whose hash Python keeps)."""
        text = _SOURCES.get(self.name)
        if text is None:
            from hetdb.backend.gpu.compile import load_source

            if len(_SOURCES) >= 1024:
                _SOURCES.pop(next(iter(_SOURCES)))
            text = _SOURCES[self.name] = load_source(HEADER) + "\n" + self.body
        return text


def generate_pipeline(spec: PipelineSpec, paged: bool = False) -> PipelineKernel:
    """The kernel of ``spec``; UnsupportedError (saying which part) when something is not compiled.
    ``paged``: the kernel reads its inputs through a *page table* (one launch over many row groups
    whose pages lie anywhere in device memory, as the dense fused kernels' page table): per page its
    first tile, first row, rows, and per input a value pointer and a validity pointer (0: no NULLs);
    each tile looks its page up (binary search over the tile starts). Rows are page-local inside the
    kernel; a materializing sink writes global rows (the page's first row + the local row). An
    input whose pages may be kept compressed has codec "paged" or "paged_tile" (PAGED_CODECS) and a
    third entry per page, 1 where the pointer is the page's encoded data section (0: a value array);
    a plain-string input's entries are its offsets (int64), validity and bytes."""
    try:
        return _Gen(spec, paged).run()
    except ExprError as e:
        raise UnsupportedError(f"pipeline is not compiled: {e}") from None


# Page table (int64) of a paged kernel: [tile start per page + total tiles][first row per page]
# [rows per page][per page, per input: value pointer, validity pointer, 0 plain / 1 encoded data
# section (plain strings: offsets pointer, validity pointer, bytes pointer)]
PAGE_PTRS = 3


class _Gen:
    def __init__(self, spec: PipelineSpec, paged: bool = False) -> None:
        self.paged = paged
        for i in spec.inputs:
            if (i.codec in PAGED_CODECS) != paged and i.codec != "plain":
                raise ExprError(f"input {i.cid} in codec {i.codec!r} is read only by "
                                f"{'per-batch' if paged else 'paged'} kernels")
        self.spec = spec
        self.inputs = {i.cid: (k, i) for k, i in enumerate(spec.inputs)}
        self.alias: dict[str, object] = {}  # projected cid -> expression over inputs and payload
        self.payload: dict[str, tuple[int, int, Input]] = {}
        self.probe_rows: dict[int, str] = {}
        dict_cids = {i.cid for i in spec.inputs if i.dictionary}
        for s in spec.stages:
            if isinstance(s, ProbeStage):
                dict_cids |= {p.cid for p in s.payload if p.dictionary}
        plain = {i.cid: (k, i.nullable) for k, i in enumerate(spec.inputs) if _plain_string(i)}
        self.em = Emitter(self._load, frozenset(dict_cids), plain, _NAME)
        self.marks: dict[int, Val] = {}
        self.keyless = False  # an aggregation without GROUP BY (aggregate)
        self.zero_signs: list[int] = []  # DOUBLE group keys with a zero-sign accumulator (aggregate)

    # ---- loads ------------------------------------------------------------------------------------
    def _load(self, cid: str) -> Val | None:
        em = self.em
        if cid in self.inputs:
            k, inp = self.inputs[cid]
            self._check_type(inp)
            value = f"tl{k}[it]" if inp.codec in TILE_CODECS else f"in{k}.load(row)"
            if inp.codec == "paged_tile":
                value = f"(tt{k} ? tl{k}[it] : in{k}.load(row))"
            valid = f"pipe::is_valid(val{k}, row)" if inp.nullable else "true"
            return em.temp(inp.dtype, value, valid)
        if cid in self.payload:
            p, j, inp = self.payload[cid]
            if inp.build_row:
                raise ExprError(f"column {cid} is a plain (not dictionary-encoded) string")
            self._check_type(inp)
            brow = self.probe_rows[p]
            value = f"({brow} >= 0 ? b{p}_pay{j}[{brow}] : ({ctype(inp.dtype)})0)"
            valid = f"{brow} >= 0" + (f" && pipe::is_valid(b{p}_payv{j}, {brow})" if inp.nullable else "")
            return em.temp(inp.dtype, value, valid)
        return None

    @staticmethod
    def _check_type(inp: Input, read: bool = True) -> None:
        """Refuse what the kernel cannot read (``read``: its values; a plain-string input is read
        only through LIKE, Emitter._plain_like)."""
        if inp.build_row and inp.dtype.kind == "string":
            return
        if not read and _plain_string(inp):
            return
        if inp.dtype.kind == "string" and not inp.dictionary:
            raise ExprError(f"column {inp.cid} is a plain (not dictionary-encoded) string")
        if inp.codec not in _COLUMN_OF and inp.codec not in TILE_CODECS and inp.codec not in PAGED_CODECS:
            raise ExprError(f"column {inp.cid} is in codec {inp.codec!r}, which kernels do not decode")
        ctype(inp.dtype)

    # ---- stages -----------------------------------------------------------------------------------
    def run(self) -> PipelineKernel:
        em = self.em
        last = self.spec.stages[-1] if self.spec.stages else None
        if isinstance(self.spec.sink, MarkBuildSink) and not (isinstance(last, ProbeStage)
                                                              and last.kind in RIGHT_KINDS):
            raise ExprError("a pipeline marking build rows must end in a right_semi or right_anti join")
        for p, stage in enumerate(self.spec.stages):
            if isinstance(stage, FilterStage):
                v = em.value(self.sub(stage.predicate))
                em.emit(f"if (!(({v.valid}) && {v.value})) continue;  // filter")
            elif isinstance(stage, ProjectStage):
                new = {cid: self.sub(e) for cid, e in stage.outputs
                       if not (isinstance(e, ColumnRef) and e.cid == cid)}
                self.alias.update(new)
            else:
                self.probe(p, stage)
        if isinstance(self.spec.sink, (MaterializeSink, MarkBuildSink)):
            return self.finish([], [])
        accs, keys = self.aggregate()
        return self.finish(accs, keys)

    def sub(self, e):
        """``e`` over the kernel's inputs and payload columns (projections inlined)."""
        return substitute(e, self.alias) if self.alias and e is not None else e

    def probe(self, p: int, s: ProbeStage) -> None:
        em = self.em
        right = s.kind in RIGHT_KINDS
        if right and (p != len(self.spec.stages) - 1 or not isinstance(self.spec.sink, MarkBuildSink)):
            raise ExprError(f"a {s.kind} join is compiled only as the last stage, marking build rows")
        if s.kind not in PROBE_KINDS and not right:
            raise ExprError(f"{s.kind} join is not compiled")
        if s.residual is not None and s.kind not in ("inner", "semi", "anti") and not right:
            raise ExprError(f"{s.kind} join with a residual condition is not compiled")
        if not s.keys:
            self.keyless_probe(p, s)
            return
        if len(s.keys) > MAX_KEYS or len(s.keys) != len(s.key_types):
            raise ExprError(f"join with {len(s.keys)} keys is not compiled")
        em.emit(f"// probe {p}: {s.kind} join on {_comment(', '.join(map(str, s.keys)))}")
        em.emit(f"i64 pb{p}[{len(s.keys)}];")
        em.emit(f"bool pn{p} = false;")
        em.emit(f"u64 ph{p} = HETDB_HASH_SEED;")
        for c, (k, t) in enumerate(zip(s.keys, s.key_types)):
            if t.kind == "string":
                emit_string_key(em, p, c, self.sub(k))
                continue
            if t.kind not in _KEY_KINDS:
                raise ExprError(f"join key {k} of type {t} is not compiled")
            k = self.sub(k)
            v = em.value(Cast(t, k) if k.dtype != t else k)
            em.emit(f"pb{p}[{c}] = key_bits(({ctype(t)}){v.value});")
            if v.valid != "true":
                em.emit(f"pn{p} = pn{p} || !({v.valid});")
            em.emit(f"ph{p} = pipe::hash_step(ph{p}, pb{p}[{c}]);")
        em.emit(f"const i64 ps{p} = pn{p} ? -1 : pipe::probe_slot<{len(s.keys)}>(b{p}_slots, b{p}_mask, "
                f"b{p}_keys, b{p}_n, b{p}_hashes, {len(s.keys)}, pb{p}, ph{p});")
        brow = f"br{p}"
        self.probe_rows[p] = brow
        for j, inp in enumerate(s.payload):
            self.payload[inp.cid] = (p, j, inp)
        if s.kind in ("semi", "anti"):
            if s.residual is None:
                em.emit(f"if (ps{p} {'<' if s.kind == 'semi' else '>='} 0) continue;")
                return
            self._semi_residual(p, s, brow,
                                f"if (ps{p} >= 0) for (i64 m{p} = b{p}_start[ps{p}]; "
                                f"m{p} < b{p}_start[ps{p}] + b{p}_count[ps{p}]; ++m{p}) {{",
                                f"b{p}_vidx == nullptr ? b{p}_rows[m{p}] : b{p}_vidx[b{p}_rows[m{p}]]")
            return
        if s.kind == "mark":
            assert s.mark is not None
            em.env[s.mark] = self.marks[p] = em.temp(
                T.BOOL, f"ps{p} >= 0", f"ps{p} >= 0 || !(b{p}_nonempty && (b{p}_has_null || pn{p}))")
            return
        if right:
            # every build row of the key (that passes the residual) is marked; the join operator
            # emits the marked (right_semi) or unmarked (right_anti) build rows at its end
            em.emit(f"const i64 pc{p} = ps{p} >= 0 ? b{p}_count[ps{p}] : 0;")
            em.open(f"for (i64 m{p} = 0; m{p} < pc{p}; ++m{p}) {{")
            em.emit(f"const i64 {brow} = b{p}_vidx == nullptr ? b{p}_rows[b{p}_start[ps{p}] + m{p}] : "
                    f"b{p}_vidx[b{p}_rows[b{p}_start[ps{p}] + m{p}]];")
            em.emit(f"if (out_marked[{brow}]) continue;  // marked already")
            if s.residual is not None:
                r = em.value(self.sub(s.residual))
                em.emit(f"if (!(({r.valid}) && {r.value})) continue;  // residual")
            em.emit(f"out_marked[{brow}] = 1;")
            return
        outer = s.kind in ("left", "single")
        count = f"(ps{p} >= 0 ? b{p}_count[ps{p}] : {1 if outer else 0})"
        em.emit(f"const i64 pc{p} = {count};")
        if s.kind == "single":
            em.emit(f"if (pc{p} > 1) atomicAdd(errors, 1ULL);")
        em.open(f"for (i64 m{p} = 0; m{p} < pc{p}; ++m{p}) {{")
        em.emit(f"const i64 {brow} = ps{p} < 0 ? -1 : (b{p}_vidx == nullptr ? "
                f"b{p}_rows[b{p}_start[ps{p}] + m{p}] : b{p}_vidx[b{p}_rows[b{p}_start[ps{p}] + m{p}]]);")
        if s.residual is not None:
            r = em.value(self.sub(s.residual))
            em.emit(f"if (!(({r.valid}) && {r.value})) continue;  // residual")

    def _semi_residual(self, p: int, s: ProbeStage, brow: str, loop: str, row_of_m: str) -> None:
        """A semi/anti probe with a residual: try the candidate build rows (``loop`` opens the loop over
        ``m{p}``; ``row_of_m`` is the build row of candidate m) until one meets the residual."""
        em = self.em
        em.emit(f"bool hit{p} = false;")
        em.open(loop)
        saved = dict(em.env)
        em.emit(f"const i64 {brow} = {row_of_m};")
        r = em.value(self.sub(s.residual))
        em.emit(f"if (({r.valid}) && {r.value}) {{ hit{p} = true; break; }}")
        em.close()
        em.env = saved
        em.emit(f"if ({'!' if s.kind == 'semi' else ''}hit{p}) continue;")
        for inp in s.payload:
            self.payload.pop(inp.cid)

    def keyless_probe(self, p: int, s: ProbeStage) -> None:
        """A join without keys (a scalar subquery's one row, a small cross product): every build row
        matches every row; ``b{p}_n`` is the number of build rows (build row m is row m)."""
        em = self.em
        if s.kind not in ("inner", "left", "single", "semi", "anti"):
            raise ExprError(f"a {s.kind} join without keys is not compiled")
        em.emit(f"// probe {p}: {s.kind} join without keys (every build row matches)")
        brow = f"br{p}"
        self.probe_rows[p] = brow
        for j, inp in enumerate(s.payload):
            self.payload[inp.cid] = (p, j, inp)
        if s.kind in ("semi", "anti"):
            if s.residual is None:
                em.emit(f"if (b{p}_n {'==' if s.kind == 'semi' else '>'} 0) continue;")
                return
            self._semi_residual(p, s, brow, f"for (i64 m{p} = 0; m{p} < b{p}_n; ++m{p}) {{", f"m{p}")
            return
        outer = s.kind in ("left", "single")
        em.emit(f"const i64 pc{p} = b{p}_n > 0 ? b{p}_n : {1 if outer else 0};")
        if s.kind == "single":
            em.emit(f"if (pc{p} > 1) atomicAdd(errors, 1ULL);")
        em.open(f"for (i64 m{p} = 0; m{p} < pc{p}; ++m{p}) {{")
        em.emit(f"const i64 {brow} = b{p}_n > 0 ? m{p} : -1;")
        if s.residual is not None:
            r = em.value(self.sub(s.residual))
            em.emit(f"if (!(({r.valid}) && {r.value})) continue;  // residual")

    def aggregate(self) -> tuple[list[Accumulator], list[GroupKeyOut]]:
        em, sink = self.em, self.spec.sink
        if len(sink.keys) > MAX_KEYS:
            raise ExprError(f"{len(sink.keys)} group keys are more than {MAX_KEYS}")
        nk = len(sink.keys)
        if nk or not sink.fold:
            em.emit("// aggregate: find or insert the group")
            em.emit(f"i64 kb[{max(nk, 1)}];")
            em.emit("i64 nb = 0;")
            em.emit("u64 h = HETDB_HASH_SEED;")
        else:
            em.emit("// aggregate: the one group's states in registers")
        keys = []
        for k, e in enumerate(sink.keys):
            e = self.sub(e)
            dict_cid = None
            if isinstance(e, ColumnRef) and e.cid in self.payload and self.payload[e.cid][2].build_row:
                brow = self.probe_rows[self.payload[e.cid][0]]  # no build row (left join): NULL
                em.emit(f"kb[{k}] = {brow} >= 0 ? {brow} : 0;")
                em.emit(f"if ({brow} < 0) nb |= {1 << k}LL;")
                em.emit(f"h = pipe::hash_step(h, kb[{k}]);")
                keys.append(GroupKeyOut(e.dtype, None, e.cid))
                continue
            expr = None
            if e.dtype.kind == "string" and not (isinstance(e, ColumnRef) and e.cid in em.dict_cids):
                # a string computed from one dictionary column (substring(c_phone, 1, 2)): group by
                # that column's codes; the executor computes the key per group and the aggregation
                # merges the groups whose keys are equal
                ref = _only_column(e)
                if ref is None or ref.cid not in em.dict_cids:
                    raise ExprError(f"group key {e} is a string that is not a dictionary column")
                expr, e = e, ref
            if e.dtype.kind == "string":
                dict_cid = e.cid
            elif e.dtype.kind not in _KEY_KINDS:
                raise ExprError(f"group key {e} of type {e.dtype} is not compiled")
            v = em.value(e)
            if e.dtype.kind == "float64":
                # the {-0.0, 0.0} group shows its first row's sign as DuckDB does (key_bits makes
                # both 0): the smallest (row << 1 | sign) of the group's zero keys, a hidden
                # accumulator that the runtime reads back (pipeline_runtime.Groups)
                pos = "(pl_row0 + pl_base + row)" if self.paged else "(pl_row0 + row)"
                em.emit(f"const double kf{k} = ({v.valid}) ? (double){v.value} : 0.0;")
                em.emit(f"const i64 kz{k} = (({v.valid}) && kf{k} == 0.0) ? "
                        f"(({pos} << 1) | (__double_as_longlong(kf{k}) < 0 ? 1LL : 0LL)) : HETDB_I64_MAX;")
                v = dataclasses.replace(v, value=f"kf{k}")
                self.zero_signs.append(k)
            bits = f"key_bits(({ctype(e.dtype)}){v.value})"
            if v.valid == "true":
                em.emit(f"kb[{k}] = {bits};")
            else:
                em.emit(f"kb[{k}] = ({v.valid}) ? {bits} : 0;")
                em.emit(f"if (!({v.valid})) nb |= {1 << k}LL;")
            em.emit(f"h = pipe::hash_step(h, kb[{k}]);")
            keys.append(GroupKeyOut(e.dtype if expr is None else expr.dtype, dict_cid, expr=expr))
        accs: list[Accumulator] = []
        # without GROUP BY every row updates the one group: its states fold in registers (kl{a}),
        # one group update per warp after the tile loop (finish), not contended atomics per row
        self.keyless = nk == 0 and sink.fold
        if self.keyless:
            em.emit("pl_any = true;")
        else:
            em.emit("h = pipe::hash_step(h, nb);")
            look = (f"pipe::group_slot<{max(nk, 1)}>(g_state, g_keys, g_mask, {nk}, kb, nb, h, g_used, g_max, "
                    "g_overflow)")
            if nk and sink.share:
                # the lanes of a warp with the row's key (same hash, then the same key bits as the
                # lowest of them) take that lane's slot: one table look-up per key and warp
                em.emit("const unsigned gs_peers = __match_any_sync(__activemask(), (unsigned long long)h);")
                em.emit("const int gs_lead = __ffs(gs_peers) - 1;")
                em.emit("bool gs_same = __shfl_sync(gs_peers, nb, gs_lead) == nb;")
                for k in range(nk):
                    em.emit(f"gs_same = (__shfl_sync(gs_peers, kb[{k}], gs_lead) == kb[{k}]) && gs_same;")
                em.emit("i64 g = -1;")
                em.emit(f"if (!gs_same || (int)(threadIdx.x & 31) == gs_lead) g = {look};")
                em.emit("const i64 gs_g = __shfl_sync(gs_peers, g, gs_lead);")
                em.emit("if (gs_same) g = gs_g;")
            else:
                em.emit(f"const i64 g = {look};")
            em.emit("if (g < 0) continue;")

        updates: list[tuple[int, str, str, str]] = []  # (accumulator, struct, value, condition)

        def acc(j: int, part: str, struct: str, kind: str, value: str, cond: str) -> None:
            a = len(accs)
            accs.append(Accumulator(j, part, struct, kind))
            if self.keyless:
                stmt = f"{struct}::fold(kl{a}, {value});"
                em.emit(stmt if cond == "true" else f"if ({cond}) {stmt}")
            else:
                updates.append((a, struct, value, cond))

        for j, (op, arg) in enumerate(sink.aggs):
            if op not in AGG_OPS:
                raise ExprError(f"aggregate {op} is not compiled")
            if op == "count_star":
                acc(j, "cnt", "fused::AccSumI64", "i64", "1LL", "true")
                continue
            if arg is None:
                raise ExprError(f"aggregate {op} needs an argument")
            arg = self.sub(arg)
            v = em.value(arg)
            kind = arg.dtype.kind
            if op == "count":
                acc(j, "cnt", "fused::AccSumI64", "i64", "1LL", v.valid)
                continue
            if kind not in _ORDERED:
                raise ExprError(f"{op} of {arg.dtype} is not compiled")
            f64 = kind == "float64"
            if op in ("sum", "avg"):
                if f64:
                    acc(j, "sum", "fused::AccSumF64", "f64", f"(double){v.value}", v.valid)
                else:
                    acc(j, "sum", "fused::AccSumI64", "i64", f"(long long){v.value}", v.valid)
                    if kind != "int32":
                        # BIGINT/DECIMAL sums are exact modulo 2^64 only; a DOUBLE sum of the same
                        # values tells which multiple of 2^64 they are off by (exec.wide.wide_sum)
                        acc(j, "fsum", "fused::AccSumF64", "f64", f"(double){v.value}", v.valid)
            else:
                name = "Min" if op == "min" else "Max"
                if f64:
                    acc(j, "val", f"fused::Acc{name}F64", "order_f64", f"(double){v.value}", v.valid)
                else:
                    acc(j, "val", f"fused::Acc{name}I64", "i64", f"(long long){v.value}", v.valid)
            acc(j, "cnt", "fused::AccSumI64", "i64", "1LL", v.valid)
        for k in self.zero_signs:
            acc(-1, f"zero_sign{k}", "fused::AccMinI64", "i64", f"kz{k}", f"kz{k} != HETDB_I64_MAX")
        if updates:
            self._group_updates(updates, sink.fold)
        return accs, keys

    def _group_updates(self, updates: list[tuple[int, str, str, str]], warp: bool) -> None:
        """The accumulator updates of a row in group slot ``g``; with ``warp`` the lanes of a warp in
        the same slot combine theirs first (fused_pipeline.cuh group_merge), a lane alone in its slot
        updates it directly."""
        em = self.em

        def direct() -> None:
            for a, struct, value, cond in updates:
                stmt = f"{struct}::add(acc{a} + g, {value});"
                em.emit(stmt if cond == "true" else f"if ({cond}) {stmt}")

        if not warp:
            direct()
            return
        em.emit("const unsigned wg_peers = fused::match_group(g);")
        em.open("if (wg_peers == (1u << (threadIdx.x & 31))) {")
        direct()
        em.close()
        em.open("else {")
        for a, struct, value, cond in updates:
            em.emit(f"i64 wg{a} = {struct}::identity();")
            stmt = f"{struct}::fold(wg{a}, {value});"
            em.emit(stmt if cond == "true" else f"if ({cond}) {stmt}")
        for a, struct, _, _ in updates:
            em.emit(f"fused::group_merge<{struct}>(wg_peers, wg{a}, acc{a} + g);")
        em.close()

    # ---- assembly ---------------------------------------------------------------------------------
    def finish(self, accs: list[Accumulator], keys: list[GroupKeyOut]) -> PipelineKernel:
        spec, em = self.spec, self.em
        params: list[str] = []
        if self.paged:
            for inp in spec.inputs:
                self._check_type(inp, read=False)
            params += ["const long long* __restrict__ pl_pages", "long long pl_num_pages", "long long num_tiles"]
        for k, inp in enumerate(spec.inputs):
            if self.paged:
                break
            self._check_type(inp, read=False)
            if _plain_string(inp):
                params += [f"const long long* __restrict__ off{k}", f"const unsigned char* __restrict__ chr{k}"]
            else:
                ptr = ctype(inp.dtype) if inp.codec == "plain" else "unsigned char"
                params.append(f"const {ptr}* __restrict__ col{k}")
            if inp.nullable:
                params.append(f"const bool* __restrict__ val{k}")
        if not self.paged:
            params.append("long long n")
            params.append("long long num_tiles")
        for lk in em.lookups:
            if lk.plain:
                params += string_table_params(lk)
                continue
            vt = "long long" if lk.join_key is not None else ctype(lk.expr.dtype)
            params += [f"const {vt}* __restrict__ lut{lk.index}_val",
                       f"const bool* __restrict__ lut{lk.index}_valid"]
        payloads = []
        for p, s in enumerate(spec.stages):
            if not isinstance(s, ProbeStage):
                continue
            params += [f"const i64* __restrict__ b{p}_slots", f"u64 b{p}_mask",
                       f"const i64* __restrict__ b{p}_keys", f"i64 b{p}_n",
                       f"const u64* __restrict__ b{p}_hashes", f"const i64* __restrict__ b{p}_start",
                       f"const i64* __restrict__ b{p}_count", f"const i64* __restrict__ b{p}_rows",
                       f"const i64* __restrict__ b{p}_vidx", f"int b{p}_nonempty", f"int b{p}_has_null"]
            for j, inp in enumerate(s.payload):
                if inp.build_row:
                    continue  # (the kernel reads only its build row)
                params.append(f"const {ctype(inp.dtype)}* __restrict__ b{p}_pay{j}")
                if inp.nullable:
                    params.append(f"const bool* __restrict__ b{p}_payv{j}")
            payloads.append(s.payload)
        rows_out = tuple(p for p in self.probe_rows if spec.stages[p].kind in ("inner", "left", "single"))
        marks_out = tuple(sorted(self.marks))
        if isinstance(spec.sink, MaterializeSink):
            params += ["long long* __restrict__ out_rows", "unsigned long long out_cap",
                       "unsigned long long* __restrict__ out_count"]
            params += [f"long long* __restrict__ out_b{p}" for p in rows_out]
            params += [f"signed char* __restrict__ out_m{p}" for p in marks_out]
            em.emit("// materialize: a warp-aggregated output position")
            em.emit("const unsigned long long o = pipe::claim(out_count);")
            em.open("if (o < out_cap) {")
            em.emit("out_rows[o] = pl_base + row;" if self.paged else "out_rows[o] = row;")
            for p in rows_out:
                em.emit(f"out_b{p}[o] = br{p};")
            for p in marks_out:
                m = self.marks[p]
                em.emit(f"out_m{p}[o] = ({m.valid}) ? ({m.value} ? 1 : 0) : 2;")
            em.close()
        elif isinstance(spec.sink, MarkBuildSink):
            params.append("unsigned char* __restrict__ out_marked")
        else:
            params += ["int* __restrict__ g_state", "i64* __restrict__ g_keys", "u64 g_mask",
                       "unsigned long long* __restrict__ g_used", "u64 g_max",
                       "unsigned long long* __restrict__ g_overflow"]
        params += [f"i64* __restrict__ acc{a}" for a in range(len(accs))]
        params.append("unsigned long long* __restrict__ errors")
        params.append("unsigned long long* __restrict__ arith_err")  # codegen/checked.py
        if self.zero_signs:
            params.append("long long pl_row0")  # rows of the earlier launches into the same table
        out = ["// compiled pipeline"] + [f"// {_comment(line)}" for line in spec.describe().splitlines()]
        out += em.globals
        out += [f"#define PL_BLOCK {PL_BLOCK}", f"#define PL_ITEMS {PL_ITEMS}", f"#define PL_TILE {PL_TILE}",
                f'extern "C" __global__ void __launch_bounds__(PL_BLOCK) {_NAME}(',
                "    " + ",\n    ".join(params) + ") {"]
        tiled = [(k, inp) for k, inp in enumerate(spec.inputs) if inp.codec in TILE_CODECS]
        per_tile = ("for", "dict")  # made per tile: they load the tile's block directory entry once
        if not self.paged:
            out += [f"  const pipe::{_COLUMN_OF[inp.codec]}<{ctype(inp.dtype)}> in{k}{{col{k}}};"
                    for k, inp in enumerate(spec.inputs)
                    if inp.codec not in TILE_CODECS and inp.codec not in per_tile and not _plain_string(inp)]
        out += [f"  const EncodedPage pg{k} = encoded_page(col{k});" for k, _ in tiled]
        if tiled or any(inp.codec == "paged_tile" for inp in spec.inputs):
            out.append("  __shared__ i64 pl_smem[HETDB_DECODE_SMEM_I64];")
        keyless = self.keyless
        if keyless:
            out.append("  bool pl_any = false;")
            out += [f"  i64 kl{a} = {x.acc}::identity();" for a, x in enumerate(accs)]
        if self.paged:
            out.append("  long long pl_page = -1;")
        out.append("  for (long long t = blockIdx.x; t < num_tiles; t += gridDim.x) {")
        if not self.paged:
            out += [f"    const pipe::{_COLUMN_OF[inp.codec]}<{ctype(inp.dtype)}> in{k}{{col{k}, t * PL_TILE}};"
                    for k, inp in enumerate(spec.inputs) if inp.codec in per_tile]
        if self.paged:  # this tile's page: its rows, first global row and column pointers
            width = PAGE_PTRS * len(spec.inputs)
            out += ["    const long long pl_p = pl_page = fused::NextPage(pl_pages, pl_num_pages, t, pl_page);",
                    "    const long long pl_first = (t - pl_pages[pl_p]) * PL_TILE;",
                    "    const long long pl_base = pl_pages[pl_num_pages + 1 + pl_p];",
                    "    const long long n = pl_pages[2 * pl_num_pages + 1 + pl_p];",
                    f"    const long long* pl_ptr = pl_pages + 3 * pl_num_pages + 1 + pl_p * {width};"]
            for k, inp in enumerate(spec.inputs):
                ptr = f"pl_ptr[{PAGE_PTRS * k}]"
                if _plain_string(inp):
                    out += [f"    const long long* __restrict__ off{k} = (const long long*){ptr};",
                            f"    const unsigned char* __restrict__ chr{k} = "
                            f"(const unsigned char*)pl_ptr[{PAGE_PTRS * k + 2}];"]
                elif inp.codec in PAGED_CODECS:
                    ct = ctype(inp.dtype)
                    out.append(f"    const pipe::PageColumn<{ct}> in{k}{{(const unsigned char*){ptr}, "
                               f"pl_ptr[{PAGE_PTRS * k + 2}], pl_first}};")
                else:
                    ct = ctype(inp.dtype)
                    out.append(f"    const pipe::PlainColumn<{ct}> in{k}{{(const {ct}*){ptr}}};")
                if inp.nullable:
                    out.append(f"    const bool* val{k} = (const bool*)pl_ptr[{PAGE_PTRS * k + 1}];")
            paged_tiled = [k for k, inp in enumerate(spec.inputs) if inp.codec == "paged_tile"]
            if paged_tiled:
                # a delta or rle page's tile: every thread of the block decodes it together (the
                # page, so the branch, is the same for the whole block)
                out.append("    const int pl_num = n - pl_first < PL_TILE ? (int)(n - pl_first) : PL_TILE;")
            for k in paged_tiled:
                ct = ctype(spec.inputs[k].dtype)
                out += [f"    {ct} tl{k}[PL_ITEMS];",
                        f"    const bool tt{k} = in{k}.tiled();",
                        f"    if (tt{k}) in{k}.load_tile<PL_BLOCK, PL_ITEMS>(pl_first, tl{k}, pl_num, pl_smem);"]
        if tiled:
            # every thread of the block decodes the tile together (the loaders synchronise the block)
            out.append("    const int pl_num = n - t * PL_TILE < PL_TILE ? (int)(n - t * PL_TILE) : PL_TILE;")
            for k, inp in tiled:
                out += [f"    {ctype(inp.dtype)} tl{k}[PL_ITEMS];",
                        f"    {TILE_CODECS[inp.codec]}<PL_BLOCK, PL_ITEMS>(pg{k}, t * PL_TILE, tl{k}, pl_num, pl_smem);"]
        out += ["#pragma unroll",
                "    for (int it = 0; it < PL_ITEMS; ++it) {",
                "      const long long row = " + ("pl_first" if self.paged else "t * PL_TILE")
                + " + threadIdx.x + it * PL_BLOCK;",
                "      if (row >= n) continue;"]
        out += em.lines
        while em.indent > 3:
            em.close()
            out.append(em.lines[-1])
        out += ["    }", "  }"]
        if keyless:
            out += _keyless_flush(accs)
        out.append("}")
        body = "\n".join(out) + "\n"
        name = "pipe_" + hashlib.sha256(body.encode()).hexdigest()[:16]
        return PipelineKernel(name, body.replace(_NAME, name), tuple(em.lookups), tuple(accs), tuple(keys),
                              tuple(payloads), rows_out, marks_out)


def _keyless_flush(accs: list[Accumulator]) -> list[str]:
    """After the tile loop of an aggregation without GROUP BY: the threads' register states (kl{a})
    combined across the warp (shuffles: every thread of the block leaves the tile loop) and the
    block (shared memory), then one group update per block. Compiled as host C++ (tests'
    sequential run of a kernel, one thread at a time) every thread updates the group itself."""
    nw = PL_BLOCK // 32
    na = max(len(accs), 1)
    update = ["i64 kb[1] = {0};",
              "const u64 h = pipe::hash_step(HETDB_HASH_SEED, 0);  // (no key bits, nb = 0)",
              "const i64 g = pipe::group_slot<1>(g_state, g_keys, g_mask, 0, kb, 0, h, g_used, g_max, g_overflow);",
              "if (g >= 0) {", *[f"  {x.acc}::merge(acc{a} + g, kl{a});" for a, x in enumerate(accs)], "}"]
    out = ["#if defined(__CUDACC__) || defined(__CUDACC_RTC__)",
           f"  __shared__ i64 kl_smem[{nw * na}];", f"  __shared__ int kl_any[{nw}];",
           "  const bool kl_some = __any_sync(0xffffffffu, pl_any);",
           "  for (int off = 16; off > 0; off >>= 1) {",
           *[f"    kl{a} = {x.acc}::combine(kl{a}, __shfl_xor_sync(0xffffffffu, kl{a}, off));"
             for a, x in enumerate(accs)],
           "  }",
           "  if ((threadIdx.x & 31) == 0) {",
           "    kl_any[threadIdx.x >> 5] = kl_some ? 1 : 0;",
           *[f"    kl_smem[{a * nw} + (threadIdx.x >> 5)] = kl{a};" for a in range(len(accs))],
           "  }",
           "  __syncthreads();",
           "  if (threadIdx.x == 0) {",
           "    bool any = false;",
           f"    for (int w = 0; w < {nw}; ++w) any = any || kl_any[w] != 0;",
           f"    for (int w = 1; w < {nw}; ++w) {{",
           *[f"      kl{a} = {x.acc}::combine(kl{a}, kl_smem[{a * nw} + w]);" for a, x in enumerate(accs)],
           "    }",
           "    if (any) {", *[f"      {line}" for line in update], "    }",
           "  }",
           "#else",
           "  if (pl_any) {", *[f"    {line}" for line in update], "  }",
           "#endif"]
    return out


def _plain_string(inp: Input) -> bool:
    """A plain-string input of the probe side (offsets and bytes; read through LIKE only)."""
    return inp.dtype.kind == "string" and not inp.dictionary and not inp.build_row and inp.codec == "plain"


def _only_column(e) -> ColumnRef | None:
    """The one column ``e`` reads (a ColumnRef node of it), None when it reads none or several or
    is not a function of it (random())."""
    refs: list[ColumnRef] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ColumnRef):
            refs.append(x)
        if isinstance(x, Call) and x.op == "random":
            return None
        stack.extend(x.children())
    return refs[0] if refs and len({r.cid for r in refs}) == 1 else None


def _comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")
