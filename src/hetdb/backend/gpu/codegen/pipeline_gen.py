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

from hetdb import types as T
from hetdb.backend.gpu.codegen.expr3 import Emitter, ExprError, Val
from hetdb.backend.gpu.codegen.expr_cuda import LiteralParam, ctype, literal_params, masked
from hetdb.backend.gpu.codegen.pipeline_gen_aggregate import AggregateGen
from hetdb.backend.gpu.codegen.pipeline_gen_assembly import AssemblyGen
from hetdb.backend.gpu.codegen.pipeline_kernel import (
    _COLUMN_OF,
    _KEY_KINDS,
    _NAME,
    MAX_KEYS,
    PAGED_CODECS,
    TILE_CODECS,
    PipelineKernel,
    _comment,
    _plain_string,
)
from hetdb.backend.gpu.codegen.pipeline_keys import emit_string_key
from hetdb.backend.gpu.codegen.pipeline_spec import (
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
from hetdb.plan.expr import Cast, ColumnRef
from hetdb.plan.exprutil import substitute


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
        with literal_params() as literals:
            return _Gen(spec, paged, literals).run()
    except ExprError as e:
        raise UnsupportedError(f"pipeline is not compiled: {e}") from None


class _Gen(AggregateGen, AssemblyGen):
    def __init__(self, spec: PipelineSpec, paged: bool = False, literals: list[LiteralParam] | None = None) -> None:
        self.paged = paged
        self.literals = [] if literals is None else literals  # filled as the stages emit their code
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
        em.emit(f"// probe {p}: {s.kind} join on {_comment(', '.join(map(str, masked(s.keys))))}")
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
