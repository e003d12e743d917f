"""Window functions in the logical plan: ``WindowCall`` (one function of a window) and the
``Window`` node (one PARTITION BY / ORDER BY specification, any number of functions over it).

A Window node passes every input column on and appends one column per function; its output rows are
its input rows (in partition/order order). Functions:

  ranking     row_number rank dense_rank percent_rank cume_dist ntile(n)
  offsets     lag(x[, n[, default]]) lead(x[, n[, default]])   (n a constant)
  frame value first_value(x) last_value(x) nth_value(x, n)
  aggregates  count_star count sum avg min max                  (over the frame)

Frames (``Frame``): ROWS or RANGE, each bound one of ``unbounded_preceding``, ``preceding`` (with
``start_n``/``end_n``, a physical offset), ``current``, ``following``, ``unbounded_following``. The
default frame is RANGE UNBOUNDED PRECEDING .. CURRENT ROW with an ORDER BY and the whole partition
without one, as in SQL. ``exclude`` takes the row (CURRENT ROW), its peer group (GROUP) or its peers
but itself (TIES) out of the frame (exec/operators/window_exclude.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.expr import Expr, Field, SortKey
from hetdb.plan.logical import Node, OneInput

RANKING = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
# *_ignore_nulls: IGNORE NULLS (the rows whose argument is NULL are skipped)
OFFSETS = ("lag", "lead", "lag_ignore_nulls", "lead_ignore_nulls")
FRAME_VALUES = ("first_value", "last_value", "nth_value", "first_value_ignore_nulls", "last_value_ignore_nulls",
                "nth_value_ignore_nulls")
AGGREGATES = ("count_star", "count", "sum", "avg", "min", "max")


@dataclass(frozen=True)
class Frame:
    kind: str = "range"                 # "rows" | "range" | "groups"
    start: str = "unbounded_preceding"
    end: str = "current"
    start_n: object = None              # offset of a "preceding"/"following" start (physical value)
    end_n: object = None
    # EXCLUDE: None (NO OTHERS), "current_row", "group" (the row's peers) or "ties" (its peers but itself)
    exclude: str | None = None

    def __str__(self) -> str:
        def bound(side: str, n: object) -> str:
            if side in ("preceding", "following"):
                return f"{n} {side.upper()}"
            return side.replace("_", " ").upper().replace("CURRENT", "CURRENT ROW")
        text = f"{self.kind.upper()} BETWEEN {bound(self.start, self.start_n)} AND {bound(self.end, self.end_n)}"
        return text + (f" EXCLUDE {self.exclude.replace('_', ' ').upper()}" if self.exclude else "")


WHOLE_PARTITION = Frame("rows", "unbounded_preceding", "unbounded_following")


@dataclass(frozen=True)
class WindowCall(Expr):
    """One window function: ``op`` over ``args`` (expressions over the Window's input)."""

    op: str = ""
    args: tuple[Expr, ...] = ()
    frame: Frame = WHOLE_PARTITION

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        framed = self.op in FRAME_VALUES + AGGREGATES or self.frame != WHOLE_PARTITION  # holistic ones over frames too
        f = f" {self.frame}" if framed else ""
        return f"{self.op}({', '.join(map(str, self.args))}){f}"


@dataclass(frozen=True)
class Window(OneInput):
    input: Node
    partition: tuple[Expr, ...]
    order: tuple[SortKey, ...]
    funcs: tuple[tuple[Field, WindowCall], ...]
    # the input columns passed on (None: all): projection pruning drops those only the window reads,
    # so that the executor does not reorder them
    keep: tuple[str, ...] | None = None

    @property
    def schema(self) -> tuple[Field, ...]:
        passed = self.input.schema if self.keep is None else tuple(f for f in self.input.schema
                                                                    if f.cid in self.keep)
        return passed + tuple(f for f, _ in self.funcs)

    def reads(self) -> frozenset[str]:
        out: set[str] = set()
        for e in self.partition:
            out |= e.columns()
        for k in self.order:
            out |= k.expr.columns()
        for _, c in self.funcs:
            out |= c.columns()
        return frozenset(out)

    def label(self) -> str:
        p = ", ".join(map(str, self.partition))
        o = ", ".join(f"{k.expr} {'DESC' if k.descending else 'ASC'} NULLS "
                      f"{'FIRST' if k.nulls_first else 'LAST'}" for k in self.order)
        fs = ", ".join(f"{f.cid}={c}" for f, c in self.funcs)
        passed = "" if self.keep is None else f" pass=[{', '.join(self.keep)}]"
        return f"Window partition=[{p}] order=[{o}] [{fs}]{passed}"
