"""What a fused pipeline computes: scan -> filter (conjuncts) -> dense-key probes -> aggregate or
selection, described with the expression IR (hetdb.plan.expr).

The spec is an immutable value (its ``describe()`` text feeds the generated kernel's name), built by
the executor from a physical pipeline. ``unfusable_reason()`` says why a spec cannot be fused (the
executor then runs the operators one at a time); ``batch_unfusable_reason()`` does the same for one
batch, because NULLs are only known per page: the fused path takes NULL-free inputs only.

Probes are *dense-array* joins (see runtime.DenseJoinTable): the build side's unique integer keys in a
small range [lo, lo + size) index an array of build rows, the shape of star-schema dimension keys
(SSB: d_datekey, p_partkey, s_suppkey, c_custkey). A probe is one bounds check and one load, with no
hashing or key comparison; build-side filters are applied at build time. Payload columns of a probe are
the build attributes later stages use (group keys such as d_year or p_brand1 codes, post-probe filters).
"""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.expr import Expr
from hetdb.types import DataType

AGGREGATE = "aggregate"
SELECTION = "selection"
# the most blocks of 128 threads an SM holds (2048 threads on sm_80 .. sm_90): min_blocks' bound
MAX_MIN_BLOCKS = 16
# the encodings the pages of a fused kernel's input may be in (FusedPipelineSpec.input_codecs)
PAGES_PLAIN = "plain"    # value arrays only
PAGES_RANDOM = "random"  # value arrays and pages read by random access (const, for, dict)
PAGES_ANY = "any"        # delta and rle pages too (decoded a tile at a time through shared memory)
PAGE_CLASSES = (PAGES_PLAIN, PAGES_RANDOM, PAGES_ANY)
RANDOM_ACCESS = ("const", "for", "dict")


def page_class(codecs: set[str] | frozenset[str]) -> str:
    """The class of an input whose pages are kept in ``codecs`` ("plain" for value arrays)."""
    encoded = set(codecs) - {"plain"}
    if not encoded:
        return PAGES_PLAIN
    return PAGES_RANDOM if encoded <= set(RANDOM_ACCESS) else PAGES_ANY
AGG_OPS = ("sum", "count", "count_star", "min", "max")
PROBE_FORMS = ("rows", "bits", "code8", "code16", "bits_code8", "bits_code16")


@dataclass(frozen=True)
class DenseProbe:
    """Inner join of the pipeline's rows with a dense-key build table on ``key`` (an integer
    expression over the pipeline's columns); ``payload`` names (cid, dtype) of build attributes that
    become columns of the pipeline after the probe."""

    key: Expr
    payload: tuple[tuple[str, DataType], ...] = ()
    # payload arrays indexed by key (runtime.DenseJoinTable.keyed_payload) instead of by build row:
    # a row's payload loads go out with its row look-up instead of after it
    by_key: bool = False
    # what the kernel reads for this probe (PROBE_FORMS; an aggregate pipeline's only: a selection
    # writes build rows): "rows" the build row per key (and payloads by row or by key); "bits" a
    # membership bitmap (one bit per key: no payload), 32x smaller than the rows, so a dimension's
    # table stays in L1; "code8" / "code16" the one payload, a non-negative integer below 2^7 / 2^15
    # (group-key ranks), per key in 1 or 2 bytes with -1 where no build row has the key: one
    # narrow load answers both the membership and the payload (DenseJoinTable.probe_arrays);
    # "bits_code8" / "bits_code16" the bitmap first, then the codes for the rows it keeps: a code
    # array too large for L1 (SSB SF 20's part: 1 MB) is read only for the few rows that join
    form: str = "rows"


@dataclass(frozen=True)
class AggregateSpec:
    """One output aggregate: op in sum, count, count_star, min, max (``arg`` None for count_star)."""

    op: str
    arg: Expr | None = None


@dataclass(frozen=True)
class FusedPipelineSpec:
    """inputs: (cid, dtype) of the scanned columns, in kernel-argument order; filters: conjuncts
    (each a bool expression, evaluated as soon as its columns are available); probes: in order;
    group_keys: integer expressions with small dense domains (given at run time); aggregates; output:
    AGGREGATE or SELECTION (row indices that pass every filter and probe, plus matched build rows)."""

    inputs: tuple[tuple[str, DataType], ...]
    filters: tuple[Expr, ...] = ()
    probes: tuple[DenseProbe, ...] = ()
    group_keys: tuple[Expr, ...] = ()
    aggregates: tuple[AggregateSpec, ...] = ()
    output: str = AGGREGATE
    # pages of the inputs may be kept compressed in device memory (option gpu_compressed_cache): the
    # kernel then reads a per-page codec flag from the page table and decodes encoded pages in place
    encoded: bool = False
    # the lanes of a warp whose rows fall into one group combine their states before the
    # accumulator's atomic (fused_pipeline.cuh group_merge; the experiment exec/compiled_features
    # fused_fold: slower than shared-memory atomics for TPC-H q01's 4 groups)
    fold: bool = False
    # inputs loaded for every row of a tile at its start, before any filter or probe (their loads
    # issue together instead of each after the stage before it has cleared flags): the columns most
    # rows still need, for which skipping the memory sectors of rows filtered out saves little
    eager: tuple[str, ...] = ()
    # threads per block (a tile is block * 4 rows); 128 unless the experiment fused_block256 asks for
    # 256 (s12, SSB q2.1's shape at SF 20: 0.998 against 1.247 ms)
    block: int = 128
    # blocks of 128 threads per SM the compiler must fit (registers capped to allow them; 0: no cap):
    # set for kernels that may read compressed pages (option gpu_encoded_min_blocks), whose decode
    # loops are latency-bound and gain from more resident warps (s14, scripts/gpu_decode_scan.py on
    # the H100: FOR 4.9x -> 2.8x and RLE 8.1x -> 6.3x a plain scan at 12 blocks per SM)
    min_blocks: int = 0
    # with ``encoded``, per input the encodings its pages may be in (PAGES_*; empty: every input any):
    # a kernel is made for the pages it is given (runtime.FusedPipeline.variant), so one whose
    # columns are all decoded or random-access leaves the delta/rle tile loaders out, and with them
    # most of its registers (SSB q1.1 on sm_90: 120 registers with them, 40 without any decoder)
    input_codecs: tuple[str, ...] = ()
    # the probe after whose filters every input column the later stages read loads at once
    # (-1: each at its first use): once few rows are left, loading the rest together costs few
    # sectors more and saves the dependent round trips of loading them one stage at a time
    # (batch_point picks it from the probes' hit rates)
    batch_after: int = -1
    # scanned columns read with the streaming cache hint (ld.global.cs, evict first): the fact
    # columns, read once, then leave L1 and L2 to the probes' dimension tables
    stream_loads: bool = False
    # the eager columns of a block's next tile load while it works on the current one (software
    # pipelining: their round trip to memory overlaps the probes' instead of starting each tile);
    # only where every eager column's pages are value arrays (the variants for other encodings
    # load as before)
    prefetch: bool = False
    # rows per thread and tile (a tile is block * items rows, at most 1024: the delta/rle tile
    # loaders' shared buffer): more rows in flight per load of a latency-bound kernel, more registers
    items: int = 4

    def input_class(self, k: int) -> str:
        """The encodings input ``k``'s pages may be in (PAGES_ANY, PAGES_RANDOM or PAGES_PLAIN)."""
        if not self.encoded:
            return PAGES_PLAIN
        return self.input_codecs[k] if self.input_codecs else PAGES_ANY

    @property
    def decodes_tiles(self) -> bool:
        """Whether the kernel may decode delta/rle tiles (it then holds their shared decode buffer)."""
        return self.encoded and any(self.input_class(k) == PAGES_ANY for k in range(len(self.inputs)))

    def describe(self) -> str:
        """Canonical text of the spec (deterministic: same spec, same text, in every process)."""
        parts = ["inputs " + ", ".join(f"{c}:{t}" for c, t in self.inputs),
                 "filters " + "; ".join(map(str, self.filters))]
        for p in self.probes:
            parts.append(f"probe {p.key} -> " + ", ".join(f"{c}:{t}" for c, t in p.payload)
                         + (" (by key)" if p.by_key else "") + ("" if p.form == "rows" else f" ({p.form})"))
        parts.append("group " + ", ".join(map(str, self.group_keys)))
        parts.append("aggs " + ", ".join(f"{a.op}({a.arg if a.arg is not None else '*'})"
                                         for a in self.aggregates))
        parts.append(f"output {self.output}")
        if self.encoded:
            parts.append("pages may be compressed")
        if self.fold:
            parts.append("states folded per warp")
        if self.eager:
            parts.append("loaded first " + ", ".join(self.eager))
        if self.block != 128:
            parts.append(f"{self.block} threads per block")
        if self.items != 4:
            parts.append(f"{self.items} rows per thread")
        if self.min_blocks:
            parts.append(f"at least {self.min_blocks} blocks of 128 threads per SM")
        if self.batch_after >= 0:
            parts.append(f"the rest loaded at once after probe {self.batch_after}")
        if self.stream_loads:
            parts.append("columns read streaming")
        if self.prefetch:
            parts.append("next tile's first columns prefetched")
        if self.input_codecs:
            parts.append("pages " + ", ".join(f"{c}:{k}" for (c, _), k in zip(self.inputs, self.input_codecs)))
        return "\n".join(parts)

    def unfusable_reason(self) -> str | None:
        """None when the spec can run as one generated kernel, else why not."""
        from hetdb.backend.gpu.codegen.expr_cuda import ExprError, check_expr

        if self.output not in (AGGREGATE, SELECTION):
            return f"unknown output kind {self.output!r}"
        if self.block not in (128, 256):
            return f"{self.block} threads per block (128 or 256)"
        if self.items not in (2, 4, 8) or self.block * self.items > 1024:
            return f"{self.items} rows per thread ({self.block} threads: 2, 4 or 8, at most 1024 per tile)"
        if self.input_codecs and (len(self.input_codecs) != len(self.inputs)
                                  or not set(self.input_codecs) <= set(PAGE_CLASSES)):
            return f"page encodings {self.input_codecs} do not match the {len(self.inputs)} inputs"
        if not 0 <= self.min_blocks <= MAX_MIN_BLOCKS:
            return f"{self.min_blocks} blocks per SM asked for (0 to {MAX_MIN_BLOCKS})"
        if self.output == SELECTION and (self.group_keys or self.aggregates):
            return "a selection pipeline has no group keys or aggregates"
        if self.output == AGGREGATE and not self.aggregates:
            return "an aggregate pipeline needs at least one aggregate"
        available = {c: t for c, t in self.inputs}
        if len(available) != len(self.inputs):
            return "duplicate input column"
        if any(c not in available for c in self.eager):
            return "a column loaded first is not an input"
        if not -1 <= self.batch_after < max(len(self.probes), 1):
            return f"batch_after {self.batch_after} is not a probe"
        for p in self.probes:
            if p.form not in PROBE_FORMS:
                return f"probe form {p.form!r} is not one of {PROBE_FORMS}"
            if p.form != "rows" and self.output != AGGREGATE:
                return f"a {p.form} probe has no build rows for a selection"
            if p.form == "bits" and p.payload:
                return "a bits probe carries no payload"
            if "code" in p.form and (len(p.payload) != 1 or p.payload[0][1].kind != "int32"):
                return f"a {p.form} probe carries one INTEGER payload"
        try:
            for p in self.probes:
                if not check_expr(p.key, available).is_integer_like:
                    return f"probe key {p.key} is not an integer"
                for cid, dtype in p.payload:
                    if cid in available:
                        return f"payload column {cid} shadows another column"
                    available[cid] = dtype
            for f in self.filters:
                if check_expr(f, available).dtype.kind != "bool":
                    return f"filter {f} is not boolean"
            for g in self.group_keys:
                if not check_expr(g, available).is_integer_like:
                    return f"group key {g} is not an integer (dense domains need integer keys or codes)"
            for a in self.aggregates:
                if a.op not in AGG_OPS:
                    return f"aggregate {a.op} is not fused"
                if (a.arg is None) != (a.op == "count_star"):
                    return f"aggregate {a.op} has the wrong number of arguments"
                if a.arg is not None:
                    t = check_expr(a.arg, available).dtype
                    if a.op != "count" and t.kind not in ("int32", "int64", "decimal", "float64", "date",
                                                          "timestamp"):
                        return f"{a.op} of {t} is not fused"
        except ExprError as e:
            return str(e)
        return None
