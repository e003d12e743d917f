"""What a compiled pipeline computes, as an immutable value: input columns (with nullability) ->
a sequence of stages (filter, project, hash probe of any kind) -> a sink (hash aggregation).

The general counterpart of spec.FusedPipelineSpec (whose dense probes and dense group domains stay
the fast path for star joins): probes go through the join build's open-addressing hash table
(hashing.GpuJoinTable) with any number of key columns and non-unique build sides (matches expand in
the kernel), NULLs follow SQL through validity, and groups go into a hash table in device memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.expr import Expr
from hetdb.types import DataType

PROBE_KINDS = ("inner", "left", "single", "semi", "anti", "mark")
RIGHT_KINDS = ("right_semi", "right_anti")  # only as the last stage, before a MarkBuildSink
AGG_OPS = ("sum", "count", "count_star", "min", "max", "avg")


@dataclass(frozen=True)
class Input:
    """A column the kernel reads: ``dictionary`` for string columns seen as int32 codes; ``codec``
    "plain" for a value array, else the encoding of the compressed page the kernel decodes in place
    (hetdb.codec: const, for, dict, delta, rle; see backend/gpu/encoded.py)."""

    cid: str
    dtype: DataType
    nullable: bool = True
    dictionary: bool = False
    codec: str = "plain"
    # a build column (probe payload) of plain strings the kernel does not read: as a group key it
    # groups by the build row; the executor puts in the strings, and the aggregation merges the
    # groups whose strings are equal
    build_row: bool = False


@dataclass(frozen=True)
class FilterStage:
    predicate: Expr


@dataclass(frozen=True)
class ProjectStage:
    """New columns computed from the columns before it (later stages refer to them by cid)."""

    outputs: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class ProbeStage:
    """A hash probe of the pipeline's rows into a finished join build.

    ``keys``: probe key expressions; ``key_types``: the build side's key types (the probe key is
    converted to them, then normalised like hashing.normalize_keys); ``payload``: build columns
    later stages read (Input, with dictionary strings as codes); ``residual``: a condition over both
    sides (inner, semi, anti, right_semi and right_anti only); ``mark``: cid of the mark column (kind mark)."""

    kind: str
    keys: tuple[Expr, ...]
    key_types: tuple[DataType, ...]
    payload: tuple[Input, ...] = ()
    residual: Expr | None = None
    mark: str | None = None


@dataclass(frozen=True)
class AggregateSink:
    """GROUP BY ``keys`` (any expressions; dictionary strings group by code) computing ``aggs``
    ((op, argument or None for count_star))."""

    keys: tuple[Expr, ...]
    aggs: tuple[tuple[str, Expr | None], ...]
    # states folded before the atomics: without keys each thread's in registers, one group update per
    # block (pipeline_gen_assembly._keyless_flush); with keys the lanes of a warp in one group combine theirs
    # (fused_pipeline.cuh group_merge). False: every row updates its group (exec/compiled_features group_fold)
    fold: bool = True
    # the lanes of a warp with equal keys look their slot up once (an experiment: exec/compiled_features
    # EXPERIMENTS slot_share)
    share: bool = False


@dataclass(frozen=True)
class MaterializeSink:
    """Compaction: the kernel writes, per surviving row (and match), the input row, the build row
    of every probe that can expand or fill in NULLs (inner, left, single) and every mark (0 false,
    1 true, 2 NULL); the executor gathers the columns the next sink needs from them."""


@dataclass(frozen=True)
class MarkBuildSink:
    """The sink of a pipeline whose last stage is a right_semi / right_anti probe: the kernel sets
    ``marked[build row] = 1`` for every build row a surviving row matches (after the residual); the
    join operator then emits the marked (right_semi) or unmarked (right_anti) build rows."""


@dataclass(frozen=True)
class PipelineSpec:
    inputs: tuple[Input, ...]
    stages: tuple[FilterStage | ProjectStage | ProbeStage, ...]
    sink: AggregateSink | MaterializeSink | MarkBuildSink

    def describe(self) -> str:
        """Canonical text (deterministic in every process)."""
        lines = ["inputs " + ", ".join(f"{i.cid}:{i.dtype}{'?' if i.nullable else ''}"
                                       f"{' dict' if i.dictionary else ''}"
                                       f"{'' if i.codec == 'plain' else ' ' + i.codec}" for i in self.inputs)]
        for s in self.stages:
            if isinstance(s, FilterStage):
                lines.append(f"filter {s.predicate}")
            elif isinstance(s, ProjectStage):
                lines.append("project " + ", ".join(f"{c} := {e}" for c, e in s.outputs))
            else:
                pay = ", ".join(f"{p.cid}:{p.dtype}{' row' if p.build_row else ''}" for p in s.payload)
                lines.append(f"probe {s.kind} [{', '.join(map(str, s.keys))}] as "
                             f"[{', '.join(map(str, s.key_types))}] -> {pay}"
                             f"{' residual ' + str(s.residual) if s.residual is not None else ''}"
                             f"{' mark ' + s.mark if s.mark else ''}")
        k = self.sink
        if isinstance(k, MaterializeSink):
            lines.append("materialize")
            return "\n".join(lines)
        if isinstance(k, MarkBuildSink):
            lines.append("mark build rows")
            return "\n".join(lines)
        lines.append("aggregate by [" + ", ".join(map(str, k.keys)) + "] "
                     + ", ".join(f"{op}({a if a is not None else '*'})" for op, a in k.aggs))
        return "\n".join(lines)
