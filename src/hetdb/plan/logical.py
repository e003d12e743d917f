"""Logical plan nodes: immutable, each with an output schema (tuple of Field) and a stable id
derived from its canonical text (so several processes agree on it)."""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.expr import AggCall, Expr, Field, SortKey, stable_id


@dataclass(frozen=True)
class Node:
    def inputs(self) -> tuple[Node, ...]:
        return ()

    @property
    def schema(self) -> tuple[Field, ...]:
        raise NotImplementedError

    def label(self) -> str:
        """One line describing this node alone (used by EXPLAIN and for the stable id)."""
        raise NotImplementedError

    def canonical(self) -> str:
        kids = ",".join(k.canonical() for k in self.inputs())
        return f"{self.label()}[{kids}]"

    @property
    def node_id(self) -> str:
        return stable_id(self.canonical())


class OneInput(Node):
    """A node of one input, held in its ``input`` field."""

    def inputs(self) -> tuple[Node, ...]:
        return (self.input,)


class SameSchema(OneInput):
    """A node of one input whose rows keep the input's columns (filter, sort, limit)."""

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.input.schema


@dataclass(frozen=True)
class Scan(Node):
    """Read ``fields``: columns of a stored table, or (``source`` "external") of data read in place,
    registered in storage.external under the key ``path``."""

    table: str
    fields: tuple[Field, ...]
    column_names: tuple[str, ...]  # stored column name per field
    filters: tuple[Expr, ...] = ()  # conjuncts pushed into the scan (zone-map pruning + early filter)
    source: str = "table"           # "table" or "external"
    path: str = ""                  # storage.external key for source == "external"

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        cols = ", ".join(self.column_names)
        f = f" filters=[{' AND '.join(map(str, self.filters))}]" if self.filters else ""
        return f"Scan {self.table} [{cols}]{f}"


@dataclass(frozen=True)
class Filter(SameSchema):
    input: Node
    predicate: Expr

    def label(self) -> str:
        return f"Filter {self.predicate}"


@dataclass(frozen=True)
class Project(OneInput):
    input: Node
    exprs: tuple[tuple[Field, Expr], ...]

    @property
    def schema(self) -> tuple[Field, ...]:
        return tuple(f for f, _ in self.exprs)

    def label(self) -> str:
        return "Project " + ", ".join(f"{f.cid}={e}" for f, e in self.exprs)


JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti", "mark", "single", "cross")


@dataclass(frozen=True)
class Join(Node):
    """Equi-join on key pairs plus an optional residual predicate over both sides.

    kinds: inner/left/right/full/cross as in SQL; semi/anti keep left rows with/without a match
    (output = left schema); mark appends ``mark`` (BOOL, three-valued like SQL IN: NULL when no match
    but a NULL was involved) to the left schema; single = left join that fails with an error when a
    left row matches more than one right row (scalar subqueries)."""

    left: Node
    right: Node
    kind: str
    left_keys: tuple[Expr, ...] = ()
    right_keys: tuple[Expr, ...] = ()
    residual: Expr | None = None
    mark: Field | None = None
    # semi/anti only: hash the (smaller) left input and stream the right one through it, marking the
    # left rows that found a match (the output is still the left rows with / without a match)
    build_left: bool = False
    # mark only: the keys are plain equalities (a NULL key matches nothing) and the mark is NULL only
    # where the residual was NULL for some pair; a correlated IN puts its correlation equalities in the
    # keys and "group condition IS TRUE AND probe = value" in the residual, so an empty group is FALSE
    mark_by_residual: bool = False

    def inputs(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    @property
    def schema(self) -> tuple[Field, ...]:
        if self.kind in ("semi", "anti"):
            return self.left.schema
        if self.kind == "mark":
            return self.left.schema + (self.mark,)
        return self.left.schema + self.right.schema

    def label(self) -> str:
        keys = ", ".join(f"{a} = {b}" for a, b in zip(self.left_keys, self.right_keys))
        res = f" residual={self.residual}" if self.residual is not None else ""
        mark = f" mark={self.mark.cid}" if self.mark is not None else ""
        build = " build=left" if self.build_left else ""
        by_res = " mark_by_residual" if self.mark_by_residual else ""
        return f"Join {self.kind} [{keys}]{res}{mark}{build}{by_res}"


@dataclass(frozen=True)
class Aggregate(OneInput):
    """GROUP BY ``keys`` computing ``aggs``; no keys = one output row (even for empty input)."""

    input: Node
    keys: tuple[tuple[Field, Expr], ...]
    aggs: tuple[tuple[Field, AggCall], ...]

    @property
    def schema(self) -> tuple[Field, ...]:
        return tuple(f for f, _ in self.keys) + tuple(f for f, _ in self.aggs)

    def label(self) -> str:
        k = ", ".join(f"{f.cid}={e}" for f, e in self.keys)
        a = ", ".join(f"{f.cid}={e}" for f, e in self.aggs)
        return f"Aggregate keys=[{k}] aggs=[{a}]"


@dataclass(frozen=True)
class Sort(SameSchema):
    input: Node
    keys: tuple[SortKey, ...]

    def label(self) -> str:
        return "Sort " + ", ".join(
            f"{k.expr} {'DESC' if k.descending else 'ASC'} NULLS {'FIRST' if k.nulls_first else 'LAST'}"
            for k in self.keys)


@dataclass(frozen=True)
class Limit(SameSchema):
    input: Node
    limit: int | None
    offset: int = 0

    def label(self) -> str:
        return f"Limit {self.limit} offset {self.offset}"


def limited(input: Node, limit: int | None, offset: int = 0) -> Node:
    """``input`` under LIMIT/OFFSET. LIMIT 0 is no rows at all: a Values of ``input``'s schema, so
    nothing under it runs (DuckDB evaluates nothing there either: an expression that would fail on
    a row, e.g. a regexp_replace rewrite naming a group its pattern lacks, fails on none)."""
    if limit == 0:
        return Values(input.schema, ())
    return Limit(input, limit, offset)


@dataclass(frozen=True)
class TopN(SameSchema):
    """Sort + Limit fused by the optimizer (limit pushdown into top-k)."""

    input: Node
    keys: tuple[SortKey, ...]
    limit: int
    offset: int = 0

    def label(self) -> str:
        keys = ", ".join(f"{k.expr} {'DESC' if k.descending else 'ASC'}" for k in self.keys)
        return f"TopN {self.limit} offset {self.offset} by {keys}"


@dataclass(frozen=True)
class Union(Node):
    """UNION ALL: the rows of every input, in input order. Input i's schema maps position by position
    onto ``fields`` (the binder made the types equal); UNION (distinct) is an Aggregate above."""

    children: tuple[Node, ...]
    fields: tuple[Field, ...]

    def inputs(self) -> tuple[Node, ...]:
        return self.children

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        return "Union all " + ", ".join(f.cid for f in self.fields)


@dataclass(frozen=True)
class Values(Node):
    """Literal rows (SELECT without FROM): ``rows`` of physical values matching ``fields``."""

    fields: tuple[Field, ...]
    rows: tuple[tuple[object, ...], ...]

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        return f"Values {len(self.rows)} rows"


@dataclass(frozen=True)
class Output(OneInput):
    """The root: final column order and user-facing names."""

    input: Node
    fields: tuple[Field, ...]  # cids of input to output, in order (names = output headers)

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        return "Output " + ", ".join(f"{f.name}:={f.cid}" for f in self.fields)
