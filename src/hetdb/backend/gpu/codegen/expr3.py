"""Expression IR -> CUDA statements with SQL three-valued logic (validity travels with every value).

Each subexpression becomes two locals, its value and whether it is valid (not NULL), emitted by an
``Emitter`` into the per-row body of a generated pipeline kernel. Values are computed even under NULL
(values under a NULL are always in range: codes are valid codes, numbers are numbers), so no branch
is needed; validity follows SQL: strict operators are NULL when an operand is, AND/OR are Kleene,
IS [NOT] NULL, COALESCE, CASE and IN with NULL items have their own rules.

The value of a strict operator is the text expr_cuda.translate makes (the same exact-or-refuse rules
as the dense fused path: no rounding rescale, no division that may hit zero). Subexpressions over one
dictionary string column with a non-string result (LIKE, comparisons with string literals, string
functions compared to something) become a *dictionary lookup*: the executor evaluates the
subexpression once per dictionary with the operator kernels and the kernel reads ``lut[code]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from hetdb import types as T
from hetdb.backend.gpu.codegen.expr_cuda import Code, ExprError, ctype, literal, pattern_param, translate
from hetdb.plan.expr import Call, Case, Cast, ColumnRef, Expr, Literal
from hetdb.types import DataType

# NULL in, NULL out does not hold for these (they may turn NULL operands into values)
_EXTRACT = {"extract_year": 0, "extract_month": 1, "extract_day": 2}
NON_STRICT = ("and", "or", "is_null", "is_not_null", "coalesce", "nullif", "concat")
_PLAIN_LIKE = ("like", "not_like", "starts_with", "ends_with", "contains")


@dataclass(frozen=True)
class Val:
    """A computed value: C++ text of the value and of its validity (``"true"`` when never NULL)."""

    value: str
    valid: str
    dtype: DataType


@dataclass(frozen=True)
class Lookup:
    """A dictionary lookup the executor fills per dictionary: ``expr`` over the string column ``cid``;
    with ``join_key`` (probe stage, key index) the values are instead the join build's string key ids
    of the dictionary's strings (int64, -1 for a string no build row has: exec/keys.StringKeyEncoder).
    ``plain``: ``cid`` is a plain-string input and the kernel looks each row's string up itself in the
    build encoder's table of strings (backend/gpu/string_keys.py: offsets, bytes, hashes, slots, mask)."""

    index: int
    expr: Expr
    cid: str
    join_key: tuple[int, int] | None = None
    plain: bool = False


def _zero(dtype: DataType) -> str:
    if dtype.kind == "bool":
        return "false"
    return f"(({ctype(dtype)})0)"


def _strict_only(expr: Expr) -> bool:
    if isinstance(expr, Case):
        return False
    if isinstance(expr, Call) and expr.op in NON_STRICT:
        return False
    if isinstance(expr, Literal) and expr.value is None:
        return False
    return all(_strict_only(c) for c in expr.children())


class Emitter:
    """Emits the statements of one kernel body. ``load(cid)`` is called for a column that is not in
    ``env`` yet (it emits the load and returns its Val, or None when unknown); ``dict_cids`` are the
    dictionary-string columns whose codes the kernel sees."""

    def __init__(self, load: Callable[[str], Val | None], dict_cids: frozenset[str],
                 plain: dict[str, tuple[int, bool]] | None = None, prefix: str = "pl") -> None:
        # ``plain``: plain-string input cid -> (input index k, nullable): the kernel has off{k} and
        # chr{k} (offsets, UTF-8 bytes) and evaluates LIKE on them; ``prefix`` names file-scope
        # constants (``globals``: their declarations, emitted before the kernel)
        self.plain = plain or {}
        self.prefix = prefix
        self.globals: list[str] = []
        self.lines: list[str] = []
        self.indent = 3
        self.env: dict[str, Val] = {}
        self._load = load
        self.dict_cids = dict_cids
        self.lookups: list[Lookup] = []
        self._n = 0
        # C++ condition under which the expression being emitted is evaluated at all (CASE branches
        # and later COALESCE arguments are, as in DuckDB, only for the rows that reach them): an
        # overflow check counts only there
        self.guard = "true"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def open(self, line: str) -> None:
        self.emit(line)
        self.indent += 1

    def close(self) -> None:
        self.indent -= 1
        self.emit("}")

    def temp(self, dtype: DataType, value: str, valid: str) -> Val:
        name = f"e{self._n}"
        self._n += 1
        self.emit(f"const {ctype(dtype)} {name} = {value};")
        if valid in ("true", "false"):
            return Val(name, valid, dtype)
        self.emit(f"const bool {name}v = {valid};")
        return Val(name, f"{name}v", dtype)

    def column(self, cid: str) -> Val:
        v = self.env.get(cid)
        if v is None:
            v = self._load(cid)
            if v is None:
                raise ExprError(f"column {cid} is not available at this point of the pipeline")
            self.env[cid] = v
        return v

    # ---- translation ----------------------------------------------------------------------------
    def value(self, expr: Expr) -> Val:
        if isinstance(expr, ColumnRef):
            return self.column(expr.cid)
        if isinstance(expr, Literal):
            if expr.value is None:
                return Val(_zero(expr.dtype) if expr.dtype.kind != "string" else "0", "false", expr.dtype)
            return Val(literal(expr.value, expr.dtype), "true", expr.dtype)
        if isinstance(expr, Call) and expr.op in _PLAIN_LIKE and expr.args \
                and isinstance(expr.args[0], ColumnRef) and expr.args[0].cid in self.plain:
            return self._plain_like(expr)
        if isinstance(expr, Call) and expr.op in ("in_list", "eq"):
            prefix = self._plain_prefix(expr)
            if prefix is not None:
                return prefix
        cols = expr.columns()
        if len(cols) == 1 and expr.dtype.kind != "string" and next(iter(cols)) in self.dict_cids \
                and _strict_only(expr):
            return self._lookup(expr, next(iter(cols)))
        if isinstance(expr, Case):
            return self._case(expr)
        if isinstance(expr, Cast):
            arg = self.value(expr.arg)
            return self._strict(dataclasses.replace(expr, arg=self._ref(arg)), [arg])
        if isinstance(expr, Call):
            return self._call(expr)
        raise ExprError(f"expression {expr} ({type(expr).__name__}) is not compiled")

    def _ref(self, v: Val) -> ColumnRef:
        return ColumnRef(v.dtype, f"@{v.value}", nullable=False)

    def _strict(self, expr: Expr, args: list[Val]) -> Val:
        """A NULL-propagating operator over already computed operands (ColumnRefs ``@name``)."""
        env = {f"@{a.value}": Code(a.value, a.dtype) for a in args}
        valid = " && ".join(dict.fromkeys(a.valid for a in args if a.valid != "true")) or "true"
        # an overflow counts only where the operands are not NULL and the row reaches this expression
        code = translate(expr, env, _both(self.guard, valid))
        if any(a.valid == "false" for a in args):
            return Val(_zero(expr.dtype), "false", expr.dtype)
        return self.temp(expr.dtype, code.text, valid)

    def _lookup(self, expr: Expr, cid: str) -> Val:
        code = self.column(cid)
        lk = next((x for x in self.lookups if x.expr == expr), None)
        if lk is None:
            lk = Lookup(len(self.lookups), expr, cid)
            self.lookups.append(lk)
        value = f"lut{lk.index}_val[{code.value}]"
        if expr.dtype.kind == "bool":
            value = f"(lut{lk.index}_val[{code.value}] != 0)"
        valid = f"lut{lk.index}_valid[{code.value}]"
        if code.valid != "true":
            valid = f"{code.valid} && {valid}"
        return self.temp(expr.dtype, value, valid)

    def _plain_like(self, expr: Call) -> Val:
        """LIKE (and starts_with / ends_with / contains) of a plain-string input, in the kernel."""
        pat = expr.args[1] if len(expr.args) == 2 else None
        if not (isinstance(pat, Literal) and isinstance(pat.value, str)):
            raise ExprError(f"{expr.op} of a plain string needs a constant pattern")
        text = pat.value
        if expr.op in ("starts_with", "ends_with", "contains"):
            if "%" in text or "_" in text:
                raise ExprError(f"{expr.op} with a wildcard character is not compiled")
            text = {"starts_with": text + "%", "ends_with": "%" + text, "contains": "%" + text + "%"}[expr.op]
        data = text.encode("utf-8")
        param = pattern_param(data)  # (a kernel parameter: the pattern is not part of the source)
        if param is None:
            name, size = f"{self.prefix}_pat{len(self.globals)}", str(len(data))
            body = ", ".join(str(b) for b in data) or "0"
            self.globals.append(f"__device__ const unsigned char {name}[{max(1, len(data))}] = {{{body}}};")
        else:
            name, size = param
        k, nullable = self.plain[expr.args[0].cid]
        value = f"pipe::like_bytes(chr{k} + off{k}[row], off{k}[row + 1] - off{k}[row], {name}, {size})"
        if expr.op == "not_like":
            value = f"!{value}"
        return self.temp(T.BOOL, value, f"pipe::is_valid(val{k}, row)" if nullable else "true")

    def _plain_prefix(self, expr: Call) -> Val | None:
        """``substring(s, 1, k) IN ('..', ...)`` (or ``= '..'``) of a plain-string input ``s`` (TPC-H
        q22's country codes of c_phone) as LIKE tests in the kernel: a literal of k characters is a
        byte prefix of ``s`` ('lit%'; UTF-8 is self-synchronizing, so the first k characters are the
        literal exactly when the bytes start with it), one of fewer characters is all of ``s``
        ('lit'), one of more never matches. None when ``expr`` is not of that shape (a literal with
        a LIKE wildcard character, a NULL among the items, another start)."""
        args = list(expr.args)
        if expr.op == "eq" and len(args) == 2 and isinstance(args[0], Literal):
            args.reverse()
        sub, items = args[0], args[1:]
        if not (isinstance(sub, Call) and sub.op == "substring" and len(sub.args) == 3
                and isinstance(sub.args[0], ColumnRef) and sub.args[0].cid in self.plain
                and all(isinstance(a, Literal) and type(a.value) is int for a in sub.args[1:])
                and sub.args[1].value == 1 and sub.args[2].value >= 0):
            return None
        if not items or not all(isinstance(a, Literal) and isinstance(a.value, str)
                                and "%" not in a.value and "_" not in a.value for a in items):
            return None
        k = sub.args[2].value
        col = sub.args[0]
        patterns = [a.value + ("%" if len(a.value) == k else "") for a in items if len(a.value) <= k]
        tests = [self._plain_like(Call(T.BOOL, "like", (col, Literal(T.STRING, p)))) for p in patterns]
        if not tests:
            _, nullable = self.plain[col.cid]
            return Val("false", "true" if not nullable else f"pipe::is_valid(val{self.plain[col.cid][0]}, row)",
                       T.BOOL)
        return self._kleene("or", tests) if len(tests) > 1 else tests[0]

    def _call(self, expr: Call) -> Val:
        op = expr.op
        if op in ("and", "or"):
            args = [self.value(a) for a in expr.args]
            return self._kleene(op, args)
        if op == "not":
            a = self.value(expr.args[0])
            return self.temp(T.BOOL, f"!{a.value}", a.valid)
        if op in ("is_null", "is_not_null"):
            a = self.value(expr.args[0])
            text = f"!({a.valid})" if op == "is_null" else f"({a.valid})"
            return self.temp(T.BOOL, text, "true")
        if op == "coalesce":
            return self._coalesce(expr)
        if op in NON_STRICT:
            raise ExprError(f"function {op} is not compiled")
        if op == "in_list":
            return self._in_list(expr)
        if op in _EXTRACT:
            a = self.value(expr.args[0])
            if a.dtype.kind == "date":
                days = f"(long long){a.value}"
            elif a.dtype.kind == "timestamp":
                days = f"pipe::floor_div({a.value}, 86400000000LL)"
            else:
                raise ExprError(f"{op} of {a.dtype} is not compiled")
            return self.temp(expr.dtype, f"({ctype(expr.dtype)})pipe::civil_part({days}, {_EXTRACT[op]})", a.valid)
        # literals stay literals (expr_cuda checks e.g. that a divisor is a non-zero literal), rendered
        # once, by translate (a literal's text may be a kernel parameter of its own)
        args = [Val("", "true", a.dtype) if _is_value(a) else self.value(a) for a in expr.args]
        refs = tuple(a if _is_value(a) else self._ref(v) for a, v in zip(expr.args, args))
        return self._strict(dataclasses.replace(expr, args=refs), args)

    def _kleene(self, op: str, args: list[Val]) -> Val:
        acc = args[0]
        for b in args[1:]:
            a = acc
            if op == "and":
                value = f"({a.value} || !({a.valid})) && ({b.value} || !({b.valid}))"
                valid = (f"(({a.valid}) && ({b.valid})) || (({a.valid}) && !{a.value}) || "
                         f"(({b.valid}) && !{b.value})")
            else:
                value = f"(({a.valid}) && {a.value}) || (({b.valid}) && {b.value})"
                valid = (f"(({a.valid}) && ({b.valid})) || (({a.valid}) && {a.value}) || "
                         f"(({b.valid}) && {b.value})")
            acc = self.temp(T.BOOL, value, "true" if a.valid == b.valid == "true" else valid)
        return acc

    def _coalesce(self, expr: Call) -> Val:
        outer = self.guard
        args: list[Val] = []
        for a in expr.args:  # an argument is reached only when every one before it is NULL
            args.append(self.value(a))
            self.guard = _both(self.guard, f"!({args[-1].valid})")
        self.guard = outer
        t = expr.dtype
        conv = [self._strict(Cast(t, self._ref(a)), [dataclasses.replace(a, valid="true")])
                if a.dtype != t else a for a in args]
        value, valid = conv[-1].value, args[-1].valid
        for a, c in zip(reversed(args[:-1]), reversed(conv[:-1])):
            value = f"(({a.valid}) ? {c.value} : {value})"
            valid = f"(({a.valid}) || ({valid}))"
        return self.temp(t, value, valid)

    def _in_list(self, expr: Call) -> Val:
        probe = self.value(expr.args[0])
        items = [a for a in expr.args[1:]]
        has_null = any(isinstance(a, Literal) and a.value is None for a in items)
        present = [a for a in items if not (isinstance(a, Literal) and a.value is None)]
        if present:
            hit = self._strict(Call(T.BOOL, "in_list", (self._ref(probe), *present)),
                               [dataclasses.replace(probe, valid="true")])
            value = hit.value
        else:
            value = "false"
        # x IN (...): TRUE on a match; NULL when x is NULL or (no match and a NULL item)
        valid = probe.valid if not has_null else f"({probe.valid}) && {value}"
        return self.temp(T.BOOL, value, valid)

    def _case(self, expr: Case) -> Val:
        t = expr.dtype
        outer = self.guard
        reach = outer  # the rows that get to the current WHEN: no earlier one was taken
        branches = []
        for cond, then in expr.whens:
            self.guard = reach
            c = self.value(cond)
            test = f"(({c.valid}) && {c.value})"
            self.guard = _both(reach, test)
            v = self.value(then)
            v2 = self._strict(Cast(t, self._ref(v)), [dataclasses.replace(v, valid="true")]) if v.dtype != t else v
            branches.append((c, v2, v.valid))
            reach = _both(reach, f"!{test}")
        self.guard = reach
        if expr.otherwise is None:
            value, valid = _zero(t), "false"
        else:
            o = self.value(expr.otherwise)
            o2 = self._strict(Cast(t, self._ref(o)), [dataclasses.replace(o, valid="true")]) if o.dtype != t else o
            value, valid = o2.value, o.valid
        self.guard = outer
        for c, v, vv in reversed(branches):
            test = f"(({c.valid}) && {c.value})"
            value = f"({test} ? {v.value} : {value})"
            valid = f"({test} ? ({vv}) : ({valid}))"
        return self.temp(t, value, valid)


def _is_value(e: Expr) -> bool:
    """A literal that is not NULL."""
    return isinstance(e, Literal) and e.value is not None


def _both(a: str, b: str) -> str:
    """C++ conjunction of two conditions ("true" is left out)."""
    if a == "true":
        return b
    if b == "true":
        return a
    return f"({a}) && ({b})"
