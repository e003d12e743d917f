"""Binding of LIST values and functions, with DuckDB's types and NULL rules: list literals
``[a, b]`` / ``list_value(...)``, ``string_split`` (``str_split``, ``string_to_array``), the length
(``len``, ``length``, ``array_length``), indexing ``l[i]`` / ``list_extract`` (1-based,
negative from the end, NULL out of range), ``list_contains`` (``array_contains``, ``list_has``),
``list_position``, ``list_sort`` / ``list_reverse_sort``, ``list_distinct``, ``array_to_string``,
``list_aggr`` and ``list_sum/min/max/avg/count``, and ``CAST(list AS VARCHAR)``. Each becomes a
``Call`` that exec/lists.py evaluates on the host; ``unnest`` is sql/unnest.py.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Literal
from hetdb.sql import list_lambdas as LL
from hetdb.sql import list_more as LM
from hetdb.sql import typing as TY

# ops exec/lists.py evaluates (sql/lists.py lets these, and only these, read LIST values)
LIST_OPS = frozenset({
    "list_value", "quantile_list", "string_split", "list_len", "list_extract", "list_contains", "list_position",
    "list_sort", "list_distinct", "array_to_string", "list_to_text", "list_sum", "list_min", "list_max",
    "list_avg", "list_count", "list_reverse", "list_cast", "list_slice", "list_transform", "list_filter",
    "list_concat", "list_flatten", "list_range", "regexp_split", "regexp_extract_all", "list_unique",
    "list_has_any", "list_has_all", "list_sort_key", "list_reduce", "is_null", "is_not_null",
})

NODES = (exp.Array, exp.Split, exp.ArraySize, exp.Bracket, exp.ArrayContains, exp.ArraySort,
          exp.ArrayDistinct, exp.ArrayToString, exp.ArrayReverse, exp.ArrayMin, exp.ArrayMax, exp.ArraySlice)
ANONYMOUS = ("list_extract", "list_element", "array_extract", "list_position",
             "list_indexof", "array_position", "list_aggr", "list_aggregate", "array_aggr",
             "array_aggregate", "list_sum", "list_min", "list_max", "list_avg", "list_count",
             "list_reverse", "list_pack", "array_value", "list_slice")
_AGGR = {"sum": "list_sum", "min": "list_min", "max": "list_max", "avg": "list_avg", "mean": "list_avg",
         "count": "list_count"}


def handles(node: exp.Expression) -> bool:
    if LL.handles(node) or LM.handles(node):
        return True
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    return isinstance(node, NODES)


def is_list(e: Expr) -> bool:
    return e.dtype.kind == "list"


def list_arg(e: Expr, what: str) -> Expr:
    if is_list(e):
        return e
    if TY.is_null_literal(e):
        raise UnsupportedError(f"{what} of an untyped NULL (give it a type: CAST(NULL AS INTEGER[]))")
    raise SqlError(f"{what} needs a LIST, got {e.dtype}")


def _string(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.STRING, None)
    if e.dtype.kind != "string":
        raise SqlError(f"{what} needs a string (VARCHAR), got {e.dtype}")
    return e


def _index(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.INT64, None)
    if not e.dtype.is_integer or e.dtype.kind == "int128":
        raise SqlError(f"{what} needs an integer index, got {e.dtype}")
    return TY.cast_to(e, T.INT64)


def list_value(args: list[Expr], what: str = "a list literal") -> Expr:
    """``[a, b, ...]``: the elements cast to their common type (NULLs adapt)."""
    typed = [a for a in args if is_list(a) or not TY.is_null_literal(a)]
    if any(is_list(a) for a in typed):
        elem = common_type([a.dtype for a in typed], what)
        args = [cast_list(a, elem) if is_list(a) else Literal(elem, None) for a in args]
    else:
        # the elements' declared types (DuckDB: [1, 2.5] is DECIMAL(11,1)[], as INTEGER and DECIMAL(2,1))
        elem = TY.common_of([a if TY.is_null_literal(a) else ColumnRef(a.dtype, "") for a in args], what)
        args = [TY.cast_to(a, elem) for a in args]
    if elem.tz or elem.kind in ("interval", "int128"):
        raise UnsupportedError(f"{what} of {elem} values")
    return Call(T.list_of(elem), "list_value", tuple(args))


def common_type(types: list[T.DataType], what: str) -> T.DataType:
    """The type values of ``types`` combine in (lists element by element, at every level)."""
    if all(t.kind == "list" for t in types):
        return T.list_of(common_type([t.elem for t in types], what))
    if any(t.kind == "list" for t in types):
        raise SqlError(f"{what} mixing LIST and {next(t for t in types if t.kind != 'list')} values")
    return TY.common_of([ColumnRef(t, "") for t in types], what)


def cast_list(x: Expr, target: T.DataType) -> Expr:
    """A LIST expression as the LIST type ``target`` (element-wise)."""
    if x.dtype == target:
        return x
    if TY.is_null_literal(x) or (isinstance(x, Call) and x.op == "list_value" and not x.args):
        return Literal(target, None) if TY.is_null_literal(x) else Call(target, "list_value", ())
    return Call(target, "list_cast", (x,))


def length(x: Expr) -> Expr:
    return Call(T.INT64, "list_len", (x,))


def to_text(x: Expr) -> Expr:
    """CAST(list AS VARCHAR): DuckDB's text ``[1, NULL, abc]``."""
    return Call(T.STRING, "list_to_text", (x,))


def extract(lst: Expr, idx: Expr, what: str = "list_extract") -> Expr:
    lst = list_arg(lst, what)
    return Call(lst.dtype.elem, "list_extract", (lst, _index(idx, what)))


_END = 2**62  # an omitted slice end: past every list's end


def _slice(lst: Expr, lo: Expr, hi: Expr, what: str) -> Expr:
    lst = list_arg(lst, what)
    return Call(lst.dtype, "list_slice", (lst, _index(lo, what), _index(hi, what)))


def _element_arg(lst: Expr, x: Expr, what: str) -> tuple[Expr, Expr]:
    """The list and ``x`` in one element type (the list's elements cast when ``x`` is wider)."""
    elem = lst.dtype.elem
    if TY.is_null_literal(x):
        return lst, Literal(elem, None)
    if is_list(x) or elem.kind == "list":
        if x.dtype != elem:
            raise SqlError(f"{what}: cannot compare {elem} elements with {x.dtype}")
        return lst, x
    t = TY.common_type(ColumnRef(elem, ""), ColumnRef(x.dtype, ""), what)
    if t != elem:
        lst = Call(T.list_of(t), "list_cast", (lst,))
    return lst, TY.cast_to(x, t)


def _aggregate(op: str, lst: Expr, what: str) -> Expr:
    elem = lst.dtype.elem
    if op == "list_count":
        return Call(T.INT64, op, (lst,))
    if op in ("list_min", "list_max"):
        if elem.kind == "list":
            raise UnsupportedError(f"{what} of nested lists")
        return Call(elem, op, (lst,))
    if not elem.is_numeric or elem.is_wide:
        raise SqlError(f"{what} needs a list of numbers, got {lst.dtype}")
    if op == "list_avg":
        return Call(T.FLOAT64, op, (lst,))
    rt = T.FLOAT64 if elem.kind == "float64" else T.INT128 if elem.is_integer \
        else T.wide_decimal(T.MAX_WIDE_PRECISION, elem.scale)
    return Call(rt, op, (lst,))


def _args(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous | exp.Array):
        return list(node.expressions)
    return [a for a in (node.this, node.args.get("expression")) if a is not None]


def quantile_list(parts: list[Expr]) -> Expr:
    """quantile_cont/quantile_disc(x, [q1, ...]): the LIST of the quantiles, NULL (not a list of
    NULLs) where x has no value."""
    lst = list_value(parts)
    return Call(lst.dtype, "quantile_list", lst.args)


def _int_bound(e: Expr) -> Expr:
    if not (e.dtype.is_integer or TY.is_null_literal(e)):
        raise SqlError(f"a string subscript needs an integer, got {e.dtype}")
    return TY.cast_to(e, T.INT64)


def _string_subscript(base: Expr, sub: exp.Expression, b) -> Expr:
    """``s[i]`` / ``s[a:b]`` on a VARCHAR (exec/functions_text.py: 1-based, negative from the end)."""
    if isinstance(sub, exp.Slice):
        lo, hi = sub.this, sub.args.get("expression")
        return Call(T.STRING, "string_slice", (base, _int_bound(b(lo)) if lo is not None else Literal(T.INT64, 1),
                                               _int_bound(b(hi)) if hi is not None else Literal(T.INT64, _END)))
    return Call(T.STRING, "string_index", (base, _int_bound(b(sub))))


def bind(node: exp.Expression, b: Callable[[exp.Expression], Expr], ctx) -> Expr:  # noqa: C901 - one dispatch
    if LL.handles(node) or LM.handles(node):
        from hetdb.sql.names import function_name

        return LL.bind(node, b, ctx, function_name(node)) if LL.handles(node) else LM.bind(node, b, function_name(node))
    if isinstance(node, exp.Array):
        return list_value([b(a) for a in node.expressions])
    if isinstance(node, exp.Bracket):
        if len(node.expressions) != 1 or (isinstance(node.expressions[0], exp.Slice)
                                          and node.expressions[0].args.get("step") is not None):
            raise UnsupportedError(f"the subscript {node.sql(dialect='duckdb')!r} (l[i] and l[a:b] are supported)")
        base = b(node.this)
        sub = node.expressions[0]
        if base.dtype.kind == "string":  # DuckDB: s[i] is the i-th character, s[a:b] a substring
            return _string_subscript(base, sub, b)
        if not is_list(base):
            raise UnsupportedError(f"indexing a {base.dtype} value with [...] (LIST and VARCHAR values can be "
                                   "indexed)")
        if isinstance(sub, exp.Slice):
            lo, hi = sub.this, sub.args.get("expression")
            return _slice(base, b(lo) if lo is not None else Literal(T.INT64, 1),
                          b(hi) if hi is not None else Literal(T.INT64, _END), "[a:b]")
        return extract(base, b(sub), "[...]")
    if isinstance(node, exp.ArraySlice):
        if node.args.get("step") is not None or node.args.get("end") is None:
            raise UnsupportedError("array_slice() with a step or without an end")
        base = b(node.this)
        if base.dtype.kind == "string":
            return Call(T.STRING, "string_slice", (base, _int_bound(b(node.args["start"])),
                                                   _int_bound(b(node.args["end"]))))
        return _slice(base, b(node.args["start"]), b(node.args["end"]), "array_slice")
    if isinstance(node, exp.Split):
        s, sep = _string(b(node.this), "string_split"), _string(b(node.expression), "string_split")
        return Call(T.list_of(T.STRING), "string_split", (s, sep))
    name = str(node.this).lower() if isinstance(node, exp.Anonymous) else type(node).__name__
    args = [b(a) for a in _args(node)]
    if name in ("list_pack", "array_value"):
        return list_value(args, f"{name}()")
    if isinstance(node, exp.ArraySize):
        what = "array_length"
        if len(args) != 1:
            raise UnsupportedError(f"{what}() with a dimension argument")
        return length(list_arg(args[0], what))
    if not args:
        raise SqlError(f"{name}() needs a LIST argument")
    if isinstance(node, exp.ArraySort):
        lst = list_arg(args[0], "list_sort")
        desc = node.args.get("asc") is not None and not node.args["asc"].this
        nulls_first = bool(node.args.get("nulls_first") and node.args["nulls_first"].this)
        return Call(lst.dtype, "list_sort", (lst, Literal(T.BOOL, desc), Literal(T.BOOL, nulls_first)))
    if isinstance(node, exp.ArrayDistinct):
        lst = list_arg(args[0], "list_distinct")
        return Call(lst.dtype, "list_distinct", (lst,))
    if isinstance(node, exp.ArrayReverse) or name == "list_reverse":
        lst = list_arg(args[0], "list_reverse")
        return Call(lst.dtype, "list_reverse", (lst,))
    if isinstance(node, exp.ArrayToString):
        if len(args) != 2:
            raise UnsupportedError("array_to_string() with a NULL replacement argument")
        return Call(T.STRING, "array_to_string", (list_arg(args[0], "array_to_string"),
                                                  _string(args[1], "array_to_string")))
    if isinstance(node, exp.ArrayMin | exp.ArrayMax):
        op = "list_min" if isinstance(node, exp.ArrayMin) else "list_max"
        return _aggregate(op, list_arg(args[0], op), op)
    if len(args) != 2 and name != "list_slice" and name not in ("list_sum", "list_min", "list_max", "list_avg", "list_count"):
        raise SqlError(f"{name}() takes 2 arguments, got {len(args)}")
    if isinstance(node, exp.ArrayContains):
        lst, x = _element_arg(list_arg(args[0], "list_contains"), args[1], "list_contains")
        return Call(T.BOOL, "list_contains", (lst, x))
    if name == "list_slice":
        if len(args) != 3:
            raise UnsupportedError(f"{name}() with {len(args)} arguments (list_slice(l, begin, end))")
        return _slice(args[0], args[1], args[2], name)
    if name in ("list_extract", "list_element", "array_extract"):
        return extract(args[0], args[1], name)
    if name in ("list_position", "list_indexof", "array_position"):
        lst, x = _element_arg(list_arg(args[0], name), args[1], name)
        return Call(T.INT32, "list_position", (lst, x))
    if name in ("list_aggr", "list_aggregate", "array_aggr", "array_aggregate"):
        fn = args[1]
        if not (isinstance(fn, Literal) and isinstance(fn.value, str)):
            raise UnsupportedError(f"{name}() with a function name that is not a constant string")
        op = _AGGR.get(fn.value.lower())
        if op is None:
            raise UnsupportedError(f"{name}(..., '{fn.value}') (supported: {', '.join(sorted(_AGGR))})")
        return _aggregate(op, list_arg(args[0], name), f"{name}(..., '{fn.value}')")
    if len(args) != 1:
        raise SqlError(f"{name}() takes 1 argument, got {len(args)}")
    return _aggregate(name, list_arg(args[0], name), name)


def _sql_type(to: exp.DataType) -> T.DataType:
    if to.this == exp.DataType.Type.ARRAY:
        if len(to.expressions) != 1:
            raise UnsupportedError(f"the type {to.sql(dialect='duckdb')}")
        return T.list_of(_sql_type(to.expressions[0]))
    params = [int(p.this.this) for p in to.expressions if isinstance(p.this, exp.Literal)]
    return TY.sql_type(to.this.value, params)


def cast(x: Expr, to: exp.DataType) -> Expr:
    """CAST to or from a LIST: a LIST to VARCHAR (DuckDB's text), a LIST to a LIST of another element
    type (each element cast), NULL to a LIST type."""
    target = _sql_type(to)
    if TY.is_null_literal(x):
        return Literal(target, None)
    if target.kind == "list":
        if not is_list(x):
            raise UnsupportedError(f"CAST of a {x.dtype} to {target}")
        if x.dtype == target:
            return x
        if isinstance(x, Call) and x.op == "list_value" and not x.args:  # [] takes any LIST type
            return Call(target, "list_value", ())
        if (x.dtype.elem.kind == "list") != (target.elem.kind == "list"):
            raise SqlError(f"cannot cast {x.dtype} to {target}")
        return Call(target, "list_cast", (x,))
    if target == T.STRING:
        return to_text(x)
    raise SqlError(f"cannot cast {x.dtype} to {target}")
