"""Generated CUDA source of a fused pipeline kernel (pure Python: no CuPy, no GPU needed).

One kernel per spec, tile-based in Crystal's style: a block owns a tile of FP_BLOCK * FP_ITEMS rows,
each thread keeps FP_ITEMS items in registers, selection flags travel through every stage, and each
column is read from device memory once, and only for rows still selected when it is first needed
(fused::BlockLoadSel). Stages, in order: filters on scanned columns; per probe: the dense-array lookup,
payload loads, then the filters that needed that payload; finally aggregation (block pre-aggregation in
shared memory when the groups fit, then one global atomic per touched group and block) or compaction
(block-scan positions, one global atomicAdd per tile).

A kernel runs over one flat batch (``in{k}`` arrays of ``n`` rows) or, with a *page table*, over many
row groups whose pages lie anywhere in device memory: the table lists per page its first tile, first
row, row count and one pointer per input column, and each tile looks its page up (a binary search over
the tiles' starts), so one launch covers every resident row group of a table (see PAGE_TABLE_*).
A spec with ``encoded`` reads pages kept compressed in device memory: the page table also holds, per
page and input, whether the pointer is a value array (0) or an encoded data section (1), and the
loads go through fused::BlockLoadSelPage, which decodes the tile's values in registers.

The kernel's name is ``fused_`` + a hash of its generated text, so equal pipelines share one compiled
binary (compile.py's disk cache keys the full source, options, architecture and versions).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hetdb import types as T
from hetdb.backend.gpu.codegen.expr_cuda import (
    Code,
    ExprError,
    LiteralParam,
    convert,
    ctype,
    literal_params,
    masked,
    translate,
)
from hetdb.backend.gpu.codegen.spec import AGGREGATE, PAGES_PLAIN, PAGES_RANDOM, FusedPipelineSpec
from hetdb.errors import UnsupportedError

FP_BLOCK = 128
FP_ITEMS = 4
FP_TILE = FP_BLOCK * FP_ITEMS
HEADER = "fused_pipeline.cuh"
# Page table (int64): [tile start per page + total tiles][first row per page][rows per page]
# [pointer per page and input column, page-major]; encoded specs add [0 plain / 1 encoded per page
# and input column, page-major].
_NAME_PLACEHOLDER = "@KERNEL_NAME@"


@dataclass(frozen=True)
class Accumulator:
    """One 8-byte accumulator per group: ``acc`` is the fused:: struct; ``kind`` how to read it back
    ("i64", "f64" for double sums, "order_f64" for the order_bits image of a double min/max)."""

    acc: str
    kind: str
    value: str  # C++ expression added per selected item


@dataclass(frozen=True)
class KernelSource:
    name: str
    body: str                        # the generated kernel (without the header)
    accumulators: tuple[Accumulator, ...]  # accumulator 0 counts rows per group (non-empty groups)
    # the literals' values, passed after every other argument (expr_cuda.literal_params)
    literals: tuple[LiteralParam, ...] = ()

    def full_source(self) -> str:
        """Header (with its includes inlined) + kernel: what NVRTC compiles (made once per kernel text)."""
        from hetdb.backend.gpu.compile import kernel_source

        return kernel_source(HEADER, self.name, self.body)



def generate(spec: FusedPipelineSpec) -> KernelSource:
    """The kernel of ``spec``; UnsupportedError when the spec is not fusable."""
    reason = spec.unfusable_reason()
    if reason is not None:
        raise UnsupportedError(f"pipeline is not fusable: {reason}")
    try:
        with literal_params() as literals:
            return _Generator(spec, literals).run()
    except ExprError as e:
        raise UnsupportedError(f"pipeline is not fusable: {e}") from None


class _Generator:
    def __init__(self, spec: FusedPipelineSpec, literals: list[LiteralParam]) -> None:
        self.spec = spec
        self.literals = literals  # filled while the stages translate their expressions
        self.lines: list[str] = []
        self.env: dict[str, Code] = {}
        self.input_index = {cid: k for k, (cid, _) in enumerate(spec.inputs)}
        self.input_types = dict(spec.inputs)
        # the eager columns come from the previous tile's prefetch (spec.prefetch)
        self.prefetching = spec.prefetch and bool(spec.eager) and all(
            spec.input_class(self.input_index[c]) == PAGES_PLAIN for c in spec.eager)

    # ---- helpers ---------------------------------------------------------------------------------
    def emit(self, line: str, indent: int = 2) -> None:
        self.lines.append("  " * indent + line)

    def per_item(self, statements: list[str]) -> None:
        self.emit("#pragma unroll", 0)
        self.emit("for (int i = 0; i < FP_ITEMS; ++i) {")
        for s in statements:
            self.emit(s, 3)
        self.emit("}")

    def load(self, cids: frozenset[str]) -> None:
        """Load (once) every scanned column in ``cids`` that is not in registers yet."""
        for cid, dtype in self.spec.inputs:
            if cid in cids and cid not in self.env:
                k = self.input_index[cid]
                self.emit(f"{ctype(dtype)} v{k}[FP_ITEMS];")
                kind = self.spec.input_class(k)
                if self.prefetching and cid in self.spec.eager:
                    self.per_item([f"v{k}[i] = nx{k}[i];"])
                    self.env[cid] = Code(f"v{k}[i]", dtype)
                    continue
                stream = ", true" if self.spec.stream_loads else ""
                if self.spec.encoded and kind == PAGES_PLAIN:  # (page-table pointers are bytes)
                    self.emit(f"fused::BlockLoadSel<FP_BLOCK, FP_ITEMS{stream}>((const {ctype(dtype)}*)in{k} + off, "
                              f"v{k}, flags);")
                elif kind == PAGES_RANDOM:
                    self.emit(f"fused::BlockLoadSelPage<FP_BLOCK, FP_ITEMS, HETDB_PAGES_RANDOM{stream}>(in{k}, enc{k}, "
                              f"off, v{k}, flags, num, nullptr);")
                elif self.spec.encoded:
                    self.emit(f"fused::BlockLoadSelPage<FP_BLOCK, FP_ITEMS{', HETDB_PAGES_ANY' + stream if stream else ''}>"
                              f"(in{k}, enc{k}, off, v{k}, flags, num, fp_decode);")
                else:
                    self.emit(f"fused::BlockLoadSel<FP_BLOCK, FP_ITEMS{stream}>(in{k} + off, v{k}, flags);")
                self.env[cid] = Code(f"v{k}[i]", dtype)

    def filters(self, exprs: list) -> None:
        for f in exprs:
            self.load(f.columns())
            code = translate(f, self.env)
            self.emit(f"// filter: {_comment(masked(f))}")
            self.per_item([f"flags[i] = flags[i] && ({code.text});"])

    # ---- stages ----------------------------------------------------------------------------------
    def run(self) -> KernelSource:
        spec = self.spec
        provided: dict[str, int] = {}  # payload cid -> probe index
        for p, probe in enumerate(spec.probes):
            for cid, _ in probe.payload:
                provided[cid] = p
        stage_filters: dict[int, list] = {}
        for f in spec.filters:
            stage = max((provided[c] for c in f.columns() if c in provided), default=-1)
            stage_filters.setdefault(stage, []).append(f)
        later_uses: set[str] = set()
        for e in [*spec.filters, *spec.group_keys, *(a.arg for a in spec.aggregates if a.arg is not None),
                  *(p.key for p in spec.probes)]:
            later_uses |= e.columns()  # a later probe may be keyed on a payload (dictionary lookups)

        self.load(frozenset(spec.eager))  # (every row of the tile: the flags are still the tile's)
        self.eager_lines = len(self.lines)
        self.filters(stage_filters.get(-1, []))
        for p, probe in enumerate(spec.probes):
            self.load(probe.key.columns())
            key = translate(probe.key, self.env)
            self.emit(f"// probe {p}: {_comment(masked(probe.key))}" + ("" if probe.form == "rows" else f" ({probe.form})"))
            used = [(j, cid, dtype) for j, (cid, dtype) in enumerate(probe.payload) if cid in later_uses]
            if probe.form != "rows":
                self.packed_probe(p, probe, key.text)
                self.filters(stage_filters.get(p, []))
                self.batch(p, stage_filters)
                continue
            self.emit(f"int r{p}[FP_ITEMS];")
            if probe.by_key:  # the payload loads go out with the row look-up (indexed by key)
                for j, _, dtype in used:
                    self.emit(f"{ctype(dtype)} q{p}_{j}[FP_ITEMS];")
                self.per_item([
                    f"r{p}[i] = -1;",
                    "if (flags[i]) {",
                    f"  const long long k = (long long)({key.text}) - p{p}_lo;",
                    f"  if (k >= 0 && k < p{p}_size) {{",
                    f"    r{p}[i] = p{p}_rows[k];",
                    *[f"    q{p}_{j}[i] = p{p}_pay{j}[k];" for j, _, _ in used],
                    "  }",
                    f"  flags[i] = r{p}[i] >= 0;",
                    "}",
                ])
            else:
                self.per_item([
                    f"r{p}[i] = -1;",
                    "if (flags[i]) {",
                    f"  const long long k = (long long)({key.text}) - p{p}_lo;",
                    f"  r{p}[i] = (k >= 0 && k < p{p}_size) ? p{p}_rows[k] : -1;",
                    f"  flags[i] = r{p}[i] >= 0;",
                    "}",
                ])
                for j, _, dtype in used:
                    self.emit(f"{ctype(dtype)} q{p}_{j}[FP_ITEMS];")
                    self.per_item([f"if (flags[i]) q{p}_{j}[i] = p{p}_pay{j}[r{p}[i]];"])
            for j, cid, dtype in used:
                self.env[cid] = Code(f"q{p}_{j}[i]", dtype)
            self.filters(stage_filters.get(p, []))
            self.batch(p, stage_filters)

        accumulators: tuple[Accumulator, ...] = ()
        if spec.output == AGGREGATE:
            accumulators = self.aggregate()
        else:
            self.select()
        return self.finish(accumulators)

    def prefetch_lines(self, ptr: dict[int, str], tile: str, first: bool) -> list[str]:
        """Code loading the eager columns of tile ``tile`` (every row in it) into ``nx{k}``, the
        registers the next iteration's load() takes them from; ``first`` also declares them (before
        the tile loop). The tile's page is looked up as the loop does (fused::NextPage from
        ``nx_page``, the page of the block's previous prefetch)."""
        spec = self.spec
        ks = [self.input_index[c] for c in spec.eager]
        k_in = len(spec.inputs)
        lines = []
        if first:
            lines += [f"{ctype(self.input_types[spec.inputs[k][0]])} nx{k}[FP_ITEMS];" for k in ks]
            lines.append("long long nx_page = -1;")
        lines += ["{", f"  const long long nt = {tile};", "  if (nt < num_tiles) {",
                  "    long long noff = nt * FP_TILE, nrows = n;"]
        lines += [f"    const {ptr[k]}* __restrict__ nin{k} = (const {ptr[k]}*)col{k};" for k in ks]
        lines += ["    if (num_pages > 0) {",
                  "      const long long p = nx_page = fused::NextPage(page_table, num_pages, nt, nx_page);",
                  "      noff = (nt - page_table[p]) * FP_TILE;",
                  "      nrows = page_table[2 * num_pages + 1 + p];"]
        lines += [f"      nin{k} = (const {ptr[k]}*)page_table[3 * num_pages + 1 + p * {k_in} + {k}];" for k in ks]
        lines += ["    }", "    int nflags[FP_ITEMS];",
                  "    tile::BlockInitFlags<FP_BLOCK, FP_ITEMS>(nullptr, nflags, tile::tile_size(nrows, noff, FP_TILE));"]
        stream = ", true" if spec.stream_loads else ""
        for k in ks:
            t = ctype(self.input_types[spec.inputs[k][0]])
            lines.append(f"    fused::BlockLoadSel<FP_BLOCK, FP_ITEMS{stream}>((const {t}*)nin{k} + noff, nx{k}, nflags);")
        lines += ["  }", "}"]
        return lines

    def packed_probe(self, p: int, probe, key: str) -> None:
        """A probe in form bits (membership only) or code8/code16 (its one payload per key, -1 where
        no build row has it): one narrow load per row answers the look-up (spec.DenseProbe.form);
        bits_code8/16: the bitmap's look-up first, the code's for the rows it keeps."""
        if probe.form == "bits":
            self.per_item([f"if (flags[i]) flags[i] = fused::BitsHas(p{p}_bits, (long long)({key}) - p{p}_lo, "
                           f"p{p}_size);"])
            return
        if probe.form.startswith("bits_"):  # (the bitmap first: the codes only for the rows it keeps)
            self.per_item([f"if (flags[i]) flags[i] = fused::BitsHas(p{p}_bits, (long long)({key}) - p{p}_lo, "
                           f"p{p}_size);"])
        (cid, dtype), = probe.payload
        self.emit(f"int q{p}_0[FP_ITEMS];")
        self.per_item([f"q{p}_0[i] = -1;",
                       f"if (flags[i]) {{ q{p}_0[i] = fused::CodeOf(p{p}_code, (long long)({key}) - p{p}_lo, p{p}_size); "
                       f"flags[i] = q{p}_0[i] >= 0; }}"])
        self.env[cid] = Code(f"q{p}_0[i]", dtype)

    def batch(self, p: int, stage_filters: dict[int, list]) -> None:
        """After probe ``p``'s filters, when it is spec.batch_after: every input column a later stage
        reads, loaded at once."""
        spec = self.spec
        if p != spec.batch_after:
            return
        rest: frozenset[str] = frozenset()
        for e in [*(q.key for q in spec.probes[p + 1:]), *(f for s, fs in stage_filters.items() if s > p for f in fs),
                  *spec.group_keys, *(a.arg for a in spec.aggregates if a.arg is not None)]:
            rest |= e.columns()
        self.load(rest & frozenset(self.input_index))

    def aggregate(self) -> tuple[Accumulator, ...]:
        spec = self.spec
        needed: frozenset[str] = frozenset()
        for e in [*spec.group_keys, *(a.arg for a in spec.aggregates if a.arg is not None)]:
            needed |= e.columns()
        self.load(needed)
        accs = [Accumulator("fused::AccSumI64", "i64", "1LL")]
        for a in spec.aggregates:
            accs.append(_accumulator(a.op, None if a.arg is None else translate(a.arg, self.env)))
        body = ["if (!flags[i]) continue;", "long long g = 0;"]
        for k, key in enumerate(spec.group_keys):
            code = translate(key, self.env)
            body += [f"const long long k{k} = (long long)({code.text}) - g{k}_lo;",
                     f"if (k{k} < 0 || k{k} >= g{k}_size) {{ atomicAdd(domain_errors, 1ULL); continue; }}",
                     f"g += k{k} * g{k}_stride;"]
        if spec.fold:  # (fused_pipeline.cuh group_merge: one update per group and warp)
            body += ["const unsigned wg_peers = fused::match_group(g);",
                     "if (wg_peers == (1u << (threadIdx.x & 31))) {",
                     *[f"  {acc.acc}::add(tgt{a} + g, {acc.value});" for a, acc in enumerate(accs)],
                     "} else {",
                     *[f"  i64 wg{a} = {acc.acc}::identity(); {acc.acc}::fold(wg{a}, {acc.value});"
                       for a, acc in enumerate(accs)],
                     *[f"  fused::group_merge<{acc.acc}>(wg_peers, wg{a}, tgt{a} + g);" for a, acc in enumerate(accs)],
                     "}"]
        else:
            body += [f"{acc.acc}::add(tgt{a} + g, {acc.value});" for a, acc in enumerate(accs)]
        self.emit("// aggregate")
        self.per_item(body)
        return tuple(accs)

    def select(self) -> None:
        self.emit("// compaction")
        self.emit("int pos[FP_ITEMS];")
        self.emit("const long long base = fused::BlockSelectPositions<FP_BLOCK, FP_ITEMS>(flags, pos, out_count);")
        stmts = ["if (!flags[i]) continue;", "const long long o = base + pos[i];",
                 "out_rows[o] = row_base + off + threadIdx.x + i * FP_BLOCK;"]
        stmts += [f"out_build{p}[o] = r{p}[i];" for p in range(len(self.spec.probes))]
        self.per_item(stmts)

    # ---- assembly --------------------------------------------------------------------------------
    def finish(self, accs: tuple[Accumulator, ...]) -> KernelSource:
        spec = self.spec
        params = [f"const {ctype(t)}* __restrict__ col{k}" for k, (_, t) in enumerate(spec.inputs)]
        params += ["long long n", "const long long* __restrict__ page_table", "long long num_pages",
                   "long long num_tiles"]
        for p, probe in enumerate(spec.probes):
            if probe.form != "rows":  # (one array per key: DenseJoinTable.probe_arrays)
                arr = {"bits": "const unsigned int* __restrict__ p{p}_bits",
                       "code8": "const signed char* __restrict__ p{p}_code",
                       "code16": "const short* __restrict__ p{p}_code"}
                params += [arr[f].format(p=p) for f in probe.form.split("_")]
                params += [f"long long p{p}_lo", f"long long p{p}_size"]
                continue
            params += [f"const int* __restrict__ p{p}_rows", f"long long p{p}_lo", f"long long p{p}_size"]
            params += [f"const {ctype(t)}* __restrict__ p{p}_pay{j}" for j, (_, t) in enumerate(probe.payload)]
        head: list[str] = []
        tail: list[str] = []
        if spec.output == AGGREGATE:
            for k in range(len(spec.group_keys)):
                params += [f"long long g{k}_lo", f"long long g{k}_size", f"long long g{k}_stride"]
            params += ["long long num_groups", "int use_shared"]
            params += [f"long long* __restrict__ acc{a}" for a in range(len(accs))]
            params.append("unsigned long long* __restrict__ domain_errors")
            head.append("extern __shared__ long long fp_smem[];")
            head += [f"long long* const tgt{a} = use_shared ? fp_smem + {a} * num_groups : acc{a};"
                     for a in range(len(accs))]
            head.append("if (use_shared) {")
            head += [f"  fused::SharedInit<{acc.acc}>(tgt{a}, num_groups);" for a, acc in enumerate(accs)]
            head += ["  __syncthreads();", "}"]
            tail.append("if (use_shared) {")
            tail.append("  __syncthreads();")
            tail += [f"  fused::SharedFlush<{acc.acc}>(tgt{a}, acc{a}, num_groups);" for a, acc in enumerate(accs)]
            tail.append("}")
        else:
            params.append("long long* __restrict__ out_rows")
            params += [f"int* __restrict__ out_build{p}" for p in range(len(spec.probes))]
            params.append("unsigned long long* __restrict__ out_count")
        params.append("unsigned long long* __restrict__ arith_err")  # codegen/checked.py
        params += [lit.declaration() for lit in self.literals]
        if spec.decodes_tiles:
            head.append("__shared__ long long fp_decode[HETDB_DECODE_SMEM_I64];")
        out = ["// fused pipeline"] + [f"// {line}" for line in masked(spec).describe().splitlines()]
        out += [f"#define FP_BLOCK {spec.block}", f"#define FP_ITEMS {spec.items}", f"#define FP_TILE {spec.block * spec.items}",
                f'extern "C" __global__ void __launch_bounds__(FP_BLOCK{_min_blocks(spec)}) {_NAME_PLACEHOLDER}(',
                "    " + ",\n    ".join(params) + ") {"]
        out += ["  " + h for h in head]
        k_in = len(spec.inputs)
        ptr = {k: "unsigned char" if spec.encoded else ctype(dt) for k, (_, dt) in enumerate(spec.inputs)}
        if self.prefetching:
            out += ["  " + line for line in self.prefetch_lines(ptr, "blockIdx.x", first=True)]
        out += ["  long long fp_page = -1;",
                "  for (long long t = blockIdx.x; t < num_tiles; t += gridDim.x) {",
                "    long long off = t * FP_TILE, rows = n, row_base = 0;"]
        out += [f"    const {ptr[k]}* __restrict__ in{k} = (const {ptr[k]}*)col{k};" for k in ptr]
        if spec.encoded:
            out += [f"    long long enc{k} = 0;" for k in ptr]
        out += ["    if (num_pages > 0) {",
                "      const long long p = fp_page = fused::NextPage(page_table, num_pages, t, fp_page);",
                "      off = (t - page_table[p]) * FP_TILE;",
                "      row_base = page_table[num_pages + 1 + p];",
                "      rows = page_table[2 * num_pages + 1 + p];"]
        out += [f"      in{k} = (const {ptr[k]}*)page_table[3 * num_pages + 1 + p * {k_in} + {k}];" for k in ptr]
        if spec.encoded:
            out += [f"      enc{k} = page_table[3 * num_pages + 1 + num_pages * {k_in} + p * {k_in} + {k}];"
                    for k in ptr]
        out += ["    }",
                "    const int num = tile::tile_size(rows, off, FP_TILE);",
                "    int flags[FP_ITEMS];",
                "    tile::BlockInitFlags<FP_BLOCK, FP_ITEMS>(nullptr, flags, num);"]
        if self.prefetching:  # (the current tile's eager columns move out of nx first: load())
            out += ["  " + line for line in self.lines[:self.eager_lines]]
            out += ["    " + line for line in self.prefetch_lines(ptr, "t + gridDim.x", first=False)]
            out += ["  " + line for line in self.lines[self.eager_lines:]]
        else:
            out += ["  " + line for line in self.lines]
        out.append("  }")
        out += ["  " + t for t in tail]
        out.append("}")
        body = "\n".join(out) + "\n"
        name = "fused_" + hashlib.sha256(body.encode()).hexdigest()[:16]
        return KernelSource(name, body.replace(_NAME_PLACEHOLDER, name), accs, tuple(self.literals))


# a column is loaded first when at least this share of its 32-byte sectors would be read anyway
EAGER_MIN_SECTORS = 0.75
SECTOR_BYTES = 32
FILTER_GUESS = 0.5  # the share of rows a filter keeps, not knowing better


def _stage_loads(spec: FusedPipelineSpec, hits: list[float], need: Callable[[frozenset[str], float], None],
                 probe_done: Callable[[float], None] | None = None) -> None:
    """Walk the stages of ``spec`` in the generator's order (scan filters, then per probe its key, the
    lookup, its payload's filters, then group keys and aggregate arguments), calling ``need(columns,
    alive)`` where a stage reads ``columns`` while an estimated ``alive`` share of the rows is still
    selected (``hits`` per probe the share of probed rows it keeps; a filter keeps FILTER_GUESS), and
    ``probe_done(alive)`` after each probe and its filters."""
    provided = {cid: p for p, probe in enumerate(spec.probes) for cid, _ in probe.payload}
    stage_filters: dict[int, list] = {}
    for f in spec.filters:
        stage_filters.setdefault(max((provided[c] for c in f.columns() if c in provided), default=-1), []).append(f)
    alive = 1.0
    for f in stage_filters.get(-1, []):
        need(f.columns(), alive)
        alive *= FILTER_GUESS
    for p, probe in enumerate(spec.probes):
        need(probe.key.columns(), alive)
        alive *= hits[p] if p < len(hits) else FILTER_GUESS
        for f in stage_filters.get(p, []):
            need(f.columns(), alive)
            alive *= FILTER_GUESS
        if probe_done is not None:
            probe_done(alive)
    for e in [*spec.group_keys, *(a.arg for a in spec.aggregates if a.arg is not None)]:
        need(e.columns(), alive)


def eager_columns(spec: FusedPipelineSpec, hits: list[float], threshold: float = EAGER_MIN_SECTORS) -> tuple[str, ...]:
    """The inputs of ``spec`` to load for every row at a tile's start (spec.eager): those of which a
    ``threshold`` share of the memory sectors or more would be read anyway when the generated code
    loads them for the rows still selected then (estimated: the stages in the generator's order, scan
    filters, then per probe its key, the lookup, its payload's filters, then group keys and aggregate
    arguments; ``hits`` per probe the share of probed rows it keeps, a dense table's build rows over
    its key range; a filter keeps FILTER_GUESS; a sector holding 32 / width values is read when one of
    them is selected). Such a column costs few extra sectors loaded first, and its load no longer
    waits for the stages before it (SSB: lo_partkey after 1/5 of the rows pass the supplier probe,
    83% of its sectors read anyway; not TPC-H q06's 8-byte l_discount after two date filters)."""
    inputs = [cid for cid, _ in spec.inputs]
    first: dict[str, float] = {}

    def need(cols: frozenset[str], alive: float) -> None:
        for cid in inputs:
            if cid in cols and cid not in first:
                first[cid] = alive

    _stage_loads(spec, hits, need)
    width = {cid: max(1, np.dtype(dtype.numpy_dtype).itemsize) for cid, dtype in spec.inputs}
    return tuple(cid for cid in inputs
                 if 1.0 - (1.0 - first.get(cid, 0.0)) ** max(1, SECTOR_BYTES // width[cid]) >= threshold)


def batch_point(spec: FusedPipelineSpec, hits: list[float]) -> int:
    """The probe of ``spec`` after which every input column the later stages read loads at once
    (spec.batch_after), or -1, by a cost model of a latency-bound kernel: loaded one stage at a time,
    each stage that loads columns is one more round trip to memory for every warp with a row still
    selected; loaded together after probe p, they cost one round trip but the sectors of the rows
    the stages in between would have dropped. A warp's round trip counts as much as reading a
    4-byte column whole (both about 1.5 ps per row on the H100 at SSB SF 20: ~1 us per trip, 1320
    resident tiles of 512 rows; 2.7 TB/s). Selected shares are estimated as eager_columns does
    (``hits`` per probe the share of probed rows it keeps, FILTER_GUESS per filter); the probe
    with the largest saving wins, the later one on ties. SSB q2.1: lo_orderdate and lo_revenue
    after the supplier and part probes (~1/125 of the rows left, in ~2/3 of the warps)."""
    inputs = {cid for cid, _ in spec.inputs}
    width = {cid: max(1, np.dtype(dtype.numpy_dtype).itemsize) for cid, dtype in spec.inputs}
    first: dict[str, int] = {}   # column -> the load point that needs it first
    point_alive = [1.0]          # selected share at each load point (0: the eager loads)

    def need(cols: frozenset[str], alive: float) -> None:
        new = [c for c in sorted(cols & inputs) if c not in first and c not in spec.eager]
        if new:
            point_alive.append(alive)
            for c in new:
                first[c] = len(point_alive) - 1

    after: list[tuple[float, int]] = []  # per probe: selected share and load points after its filters
    _stage_loads(spec, hits, need, lambda alive: after.append((alive, len(point_alive) - 1)))

    def sectors(a: float, c: str) -> float:
        return 1.0 - (1.0 - a) ** max(1, SECTOR_BYTES // width[c])

    def warps(a: float) -> float:
        return 1.0 - (1.0 - a) ** (32 * spec.items)

    best, best_gain = -1, 1e-9
    for p, (a, last) in enumerate(after):
        rest = [c for c, point in first.items() if point > last]
        if not rest:
            continue
        trips = sum(warps(point_alive[k]) for k in {first[c] for c in rest})
        extra = sum((sectors(a, c) - sectors(point_alive[first[c]], c)) * width[c] / 4 for c in rest)
        gain = trips - warps(a) - extra
        if gain >= best_gain:
            best, best_gain = p, gain
    return best


def _min_blocks(spec: FusedPipelineSpec) -> str:
    """The launch bound's second argument: ``spec.min_blocks`` blocks of 128 threads per SM, in
    blocks of the spec's size (the same threads, so the same register cap); none for a kernel
    holding the delta/rle tile loaders (``decodes_tiles``: on sm_90 the SSB kernels need 120-128
    registers with them and spill 112-240 bytes per thread under a cap of 8 blocks per SM)."""
    blocks = 0 if spec.decodes_tiles else spec.min_blocks * 128 // spec.block
    return f", {blocks}" if blocks else ""


def _accumulator(op: str, arg: Code | None) -> Accumulator:
    if op in ("count", "count_star"):
        return Accumulator("fused::AccSumI64", "i64", "1LL")
    assert arg is not None
    is_float = arg.dtype.kind == "float64"
    if op == "sum":
        if is_float:
            return Accumulator("fused::AccSumF64", "f64", f"({arg.text})")
        return Accumulator("fused::AccSumI64", "i64", f"(long long)({arg.text})")
    if op in ("min", "max"):
        name = "Min" if op == "min" else "Max"
        if is_float:
            return Accumulator(f"fused::Acc{name}F64", "order_f64", f"({convert(arg, T.FLOAT64)})")
        return Accumulator(f"fused::Acc{name}I64", "i64", f"(long long)({arg.text})")
    raise ExprError(f"aggregate {op} is not fused")


def _comment(expr: object) -> str:
    # Generated comments must not end the comment or the line early.
    return str(expr).replace("*/", "* /").replace("\n", " ")
