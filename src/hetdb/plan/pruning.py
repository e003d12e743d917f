"""Zone-map pruning: decide for one row group (page) whether a scan's filters are always false
("skip"), always true ("all": no need to evaluate them) or unknown ("unknown": read and filter).

Each predicate is mapped to the set of SQL truth values {T, F, N} its rows *may* take, computed
from min/max/null_count/nan_count; AND/OR/NOT combine the sets with three-valued logic (an
over-approximation, hence sound). Skip when no row may be TRUE; all when every row must be TRUE.
Ordering follows DuckDB: NaN is larger than every number and equal to itself. Anything the rules
do not cover is {T, F, N}: unknown means keep.
"""

from __future__ import annotations

import math

from hetdb.plan.expr import Call, ColumnRef, Expr, Literal

T_, F_, N_ = "T", "F", "N"
ALL = frozenset((T_, F_, N_))
_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_AND = {(T_, T_): T_, (T_, N_): N_, (N_, T_): N_, (N_, N_): N_}
_OR = {(F_, F_): F_, (F_, N_): N_, (N_, F_): N_, (N_, N_): N_}


def _and(a: frozenset, b: frozenset) -> frozenset:
    return frozenset(F_ if F_ in (x, y) else _AND[(x, y)] for x in a for y in b)


def _or(a: frozenset, b: frozenset) -> frozenset:
    return frozenset(T_ if T_ in (x, y) else _OR[(x, y)] for x in a for y in b)


def _not(a: frozenset) -> frozenset:
    return frozenset({T_: F_, F_: T_, N_: N_}[x] for x in a)


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _cmp_range(op: str, mn, mx, c) -> tuple[bool, bool]:
    """(may be TRUE, may be FALSE) for ``x op c`` over non-NULL, non-NaN x in [mn, mx]."""
    if op == "eq":
        return mn <= c <= mx, not (mn == mx == c)
    if op == "ne":
        return not (mn == mx == c), mn <= c <= mx
    if op == "lt":
        return mn < c, mx >= c
    if op == "le":
        return mn <= c, mx > c
    if op == "gt":
        return mx > c, mn <= c
    return mx >= c, mn < c  # ge


def _nan_outcome(op: str) -> str:
    """Truth of ``NaN op c`` for a non-NaN constant c (NaN sorts above every number)."""
    return T_ if op in ("ne", "gt", "ge") else F_


def _compare(op: str, col: ColumnRef, c: object, zm) -> frozenset:
    if c is None:
        return frozenset((N_,))
    out: set[str] = set()
    if zm.null_count > 0:
        out.add(N_)
    nans = zm.nan_count or 0
    regular = zm.num_rows - zm.null_count - nans
    if nans > 0:
        out |= {T_, F_} if _is_nan(c) else {_nan_outcome(op)}
    if regular > 0:
        if zm.min is None or zm.max is None or _is_nan(c):
            out |= {T_, F_}
        else:
            try:
                may_t, may_f = _cmp_range(op, zm.min, zm.max, c)
            except TypeError:
                return ALL
            if may_t:
                out.add(T_)
            if may_f:
                out.add(F_)
    return frozenset(out)


def _in_list(col: ColumnRef, items: tuple[Expr, ...], zm) -> frozenset:
    if not all(isinstance(i, Literal) for i in items):
        return ALL
    values = [i.value for i in items if i.value is not None]
    no_match = N_ if len(values) < len(items) else F_  # x IN (..., NULL) is NULL, not FALSE
    out: set[str] = set()
    if zm.null_count > 0:
        out.add(N_)
    nans = zm.nan_count or 0
    regular = zm.num_rows - zm.null_count - nans
    if nans > 0:
        out |= {T_, no_match} if any(_is_nan(v) for v in values) else {no_match}
    if regular > 0:
        if zm.min is None or zm.max is None:
            return ALL
        try:
            may_t = any(zm.min <= v <= zm.max for v in values if not _is_nan(v))
            may_f = not (zm.min == zm.max and any(v == zm.min for v in values))
        except TypeError:
            return ALL
        if may_t:
            out.add(T_)
        if may_f:
            out.add(no_match)
    return frozenset(out)


def possible(e: Expr, zone_maps: dict) -> frozenset:
    """The truth values rows of the page may give ``e`` (a subset of {T, F, N})."""
    if isinstance(e, Literal):
        if e.value is None:
            return frozenset((N_,))
        return frozenset((T_,)) if e.value is True else frozenset((F_,)) if e.value is False else ALL
    if not isinstance(e, Call):
        return ALL
    op, args = e.op, e.args
    if op == "and":
        return _and(possible(args[0], zone_maps), possible(args[1], zone_maps))
    if op == "or":
        return _or(possible(args[0], zone_maps), possible(args[1], zone_maps))
    if op == "not":
        return _not(possible(args[0], zone_maps))
    if op in ("is_null", "is_not_null") and isinstance(args[0], ColumnRef):
        zm = zone_maps.get(args[0].cid)
        if zm is None:
            return ALL
        out = set()
        if zm.null_count > 0:
            out.add(T_ if op == "is_null" else F_)
        if zm.null_count < zm.num_rows:
            out.add(F_ if op == "is_null" else T_)
        return frozenset(out)
    if op in _FLIP:
        a, b = args
        if isinstance(b, ColumnRef) and isinstance(a, Literal):
            a, b, op = b, a, _FLIP[op]
        if isinstance(a, ColumnRef) and isinstance(b, Literal) and a.cid in zone_maps:
            return _compare(op, a, b.value, zone_maps[a.cid])
        return ALL
    if op == "in_list" and isinstance(args[0], ColumnRef) and args[0].cid in zone_maps:
        return _in_list(args[0], args[1:], zone_maps[args[0].cid])
    return ALL


def prune(filters: tuple[Expr, ...], zone_maps: dict) -> str:
    """"skip" (no row can pass), "all" (every row passes) or "unknown" for one row group.

    ``zone_maps``: cid -> ZoneMap(min, max, null_count, nan_count, num_rows) of that row group;
    columns without an entry are unknown."""
    if any(getattr(z, "num_rows", 1) == 0 for z in zone_maps.values()):
        return "skip"
    acc = frozenset((T_,))
    for f in filters:
        acc = _and(acc, possible(f, zone_maps))
        if T_ not in acc:
            return "skip"
    return "all" if acc == frozenset((T_,)) else "unknown"
