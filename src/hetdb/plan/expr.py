"""The expression IR: typed at bind time, immutable, backend-neutral.

Every column flowing through a plan has a unique column id (``cid``, a string such as
``"lo_revenue#7"``) assigned by the binder; expressions refer to columns by cid, batches key their
columns by cid, so optimizer passes can move expressions between nodes without re-indexing.

Literal values are held in their *physical* representation (see hetdb.types): int for
int32/int64/date (days)/timestamp (us)/decimal (scaled by 10**scale), float, bool, str; ``None`` is NULL.

``Call.op`` names (args are positional):
  arithmetic  add sub mul div (true division, DuckDB's ``/``) intdiv (``//``) mod neg abs round
              sqrt power ln exp floor ceil sign
  comparison  eq ne lt le gt ge                    (strings compare byte-wise)
  logic       and or not                           (SQL three-valued logic)
  null tests  is_null is_not_null
  strings     like not_like ilike (args[1] is a Literal pattern) substring (s, start, [len])
              upper lower length concat starts_with ends_with contains trim
  membership  in_list (args[0] probe, args[1:] Literals; NULL semantics of SQL IN)
  conditional coalesce nullif
  dates       extract_year extract_month extract_day (on date or timestamp) date_add_days
              date_add_months (date, n) date_trunc_* …
Types are resolved by the binder (``dtype`` is the result type): DuckDB's rules, e.g. decimal * decimal
-> decimal with summed scales, int / int -> float64, sum(int) -> int64/hugeint (int64 here).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from hetdb.types import DataType


@dataclass(frozen=True)
class Expr:
    dtype: DataType

    def children(self) -> tuple[Expr, ...]:
        return ()

    def columns(self) -> frozenset[str]:
        """cids this expression reads (a lambda's parameters are its own, not read from a plan).
        Kept on the (immutable) expression after the first call: planning asks it of the same
        expressions many times (pushdown, pruning, validation after every pass)."""
        cols = self.__dict__.get("_columns")
        if cols is None:
            cols = self.__dict__["_columns"] = self._find_columns()
        return cols

    def _find_columns(self) -> frozenset[str]:
        out: set[str] = set()
        bound: set[str] = set()
        stack: list[Expr] = [self]
        while stack:
            e = stack.pop()
            if isinstance(e, ColumnRef):
                out.add(e.cid)
            elif isinstance(e, Lambda):
                bound.update(p.cid for p in e.params)
            stack.extend(e.children())
        return frozenset(out - bound)


@dataclass(frozen=True)
class ColumnRef(Expr):
    cid: str = ""
    nullable: bool = True

    def __str__(self) -> str:
        return self.cid


_NAN = float("nan")


@dataclass(frozen=True)
class Literal(Expr):
    value: object = None

    def __post_init__(self) -> None:
        # one NaN object: NaN != NaN, so two NaN literals (and the expressions holding them, e.g. a
        # GROUP BY item and its SELECT twin) would never compare or hash equal
        if isinstance(self.value, float) and self.value != self.value:
            object.__setattr__(self, "value", _NAN)

    def __str__(self) -> str:
        return "NULL" if self.value is None else repr(self.value)


@dataclass(frozen=True)
class Call(Expr):
    op: str = ""
    args: tuple[Expr, ...] = ()

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        return f"{self.op}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Cast(Expr):
    arg: Expr | None = None

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def __str__(self) -> str:
        return f"cast({self.arg} AS {self.dtype})"


@dataclass(frozen=True)
class Case(Expr):
    whens: tuple[tuple[Expr, Expr], ...] = ()
    otherwise: Expr | None = None  # None means ELSE NULL

    def children(self) -> tuple[Expr, ...]:
        kids = [x for pair in self.whens for x in pair]
        return tuple(kids + ([self.otherwise] if self.otherwise is not None else []))

    def __str__(self) -> str:
        body = " ".join(f"WHEN {c} THEN {v}" for c, v in self.whens)
        return f"CASE {body} ELSE {self.otherwise} END"


@dataclass(frozen=True)
class Lambda(Expr):
    """``lambda x[, i]: body``, only as an argument of a list function (exec/lists.py evaluates
    ``body`` over a batch holding the elements as ``params[0]`` and, with two, their 1-based
    positions as ``params[1]``); ``dtype`` is the body's."""

    params: tuple[ColumnRef, ...] = ()
    body: Expr | None = None

    def children(self) -> tuple[Expr, ...]:
        return (self.body,)

    def __str__(self) -> str:
        return f"lambda {', '.join(map(str, self.params))}: {self.body}"


@dataclass(frozen=True)
class AggCall(Expr):
    """An aggregate, only inside ``Aggregate.aggs``. op: sum count count_star min max avg any."""

    op: str = ""
    arg: Expr | None = None
    distinct: bool = False

    def children(self) -> tuple[Expr, ...]:
        return () if self.arg is None else (self.arg,)

    def __str__(self) -> str:
        return f"{self.op}({'DISTINCT ' if self.distinct else ''}{self.arg if self.arg is not None else '*'})"


@dataclass(frozen=True)
class Field:
    """One output column of a plan node."""

    cid: str
    name: str  # user-facing name (output header)
    dtype: DataType
    nullable: bool = True


@dataclass(frozen=True)
class SortKey:
    expr: Expr
    descending: bool = False
    nulls_first: bool = False  # DuckDB default: NULLS LAST for ASC and DESC


def stable_id(text: str) -> str:
    """Content-derived id (same in every process): first 12 hex digits of sha1(text)."""
    return hashlib.sha1(text.encode()).hexdigest()[:12]


