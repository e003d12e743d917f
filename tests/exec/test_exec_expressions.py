"""The expression evaluator vs DuckDB: three-valued logic, NULL propagation, decimals, dates, strings."""

from __future__ import annotations

from exec_plan_helpers import check, col, output, run, scan

from hetdb import types as T
from hetdb.plan import logical as L
from hetdb.plan.expr import Call, Case, Cast, Field, Literal

B, I32, I64, F64, S, D = T.BOOL, T.INT32, T.INT64, T.FLOAT64, T.STRING, T.DATE
DEC = T.decimal(12, 2)


def test_expressions_match_duckdb(db, duck, backend):
    s = scan(db, "fact", ["k", "a", "b", "c", "d", "e"])
    a, b, c, d, e, k = (col(s, x) for x in "abcdek")
    exprs = [
        ("and3", B, Call(B, "and", (Call(B, "gt", (a, Literal(I32, 10))), Call(B, "like", (b, Literal(S, "%an%")))))),
        ("or3", B, Call(B, "or", (Call(B, "gt", (a, Literal(I32, 30))), Call(B, "eq", (b, Literal(S, "fig")))))),
        ("not3", B, Call(B, "not", (Call(B, "lt", (d, Literal(F64, 0.0))),))),
        ("inl", B, Call(B, "in_list", (a, Literal(I32, 1), Literal(I32, 2), Literal(I32, None)))),
        ("ins", B, Call(B, "in_list", (b, Literal(S, "fig"), Literal(S, "date")))),
        ("year", I64, Call(I64, "extract_year", (e,))),
        ("month", I64, Call(I64, "extract_month", (e,))),
        ("addm", D, Call(D, "date_add_months", (e, Literal(I32, 13)))),
        ("mulc", T.decimal(18, 4), Call(T.decimal(18, 4), "mul", (c, c))),
        ("divc", F64, Call(F64, "div", (c, Literal(DEC, 300)))),
        ("idiv", I32, Call(I32, "intdiv", (Call(I32, "sub", (a, Literal(I32, 20))), Literal(I32, 7)))),
        ("imod", I32, Call(I32, "mod", (Call(I32, "sub", (a, Literal(I32, 20))), Literal(I32, 7)))),
        ("rnd", T.decimal(12, 1), Call(T.decimal(12, 1), "round", (c, Literal(I32, 1)))),
        ("sub", S, Call(S, "substring", (b, Literal(I64, 2), Literal(I64, 3)))),
        ("len", I64, Call(I64, "length", (b,))),
        ("case", S, Case(S, ((Call(B, "gt", (a, Literal(I32, 20))), b),), Literal(S, "low"))),
        ("coal", I32, Call(I32, "coalesce", (a, Literal(I32, -1)))),
        ("cast", F64, Cast(F64, c)),
        ("nul", B, Call(B, "is_null", (b,))),
    ]
    p = L.Project(s, tuple((Field(n, n, t), x) for n, t, x in exprs) + ((Field("kk", "kk", I64), k),))
    out = run(output(p), db, backend, batch_rows=1000)
    sql = ("select (a > 10 and b like '%an%'), (a > 30 or b = 'fig'), not (d < 0), a in (1, 2, null), "
           "b in ('fig', 'date'), extract(year from e), extract(month from e), "
           "cast(e + interval 13 month as date), c * c, c / 3.00, (a - 20) // 7, (a - 20) % 7, round(c, 1), "
           "substring(b, 2, 3), length(b), case when a > 20 then b else 'low' end, coalesce(a, -1), "
           "cast(c as double), b is null, k from fact")
    check(out, duck, sql, min_rows=3000)
