"""Hundreds of malformed statements: each must raise a typed hetdb error, never crash, never answer.

Corpora: every prefix of the benchmark queries (truncated at each token), valid queries with garbage
tokens inserted, misspelled table and column names (CatalogError naming the right one), type errors
DuckDB also rejects, constructs outside hetdb's coverage (UnsupportedError, or a correct answer), and
odd inputs (empty text, deep nesting, control characters). DuckDB decides what is malformed: when it
rejects a statement, hetdb must raise a HetdbError; a statement sqlglot cannot parse is a syntax error
and must carry line and column.
"""

from __future__ import annotations

import random
import re
import threading
import traceback

import pytest
import sqlglot
from diff_check import mismatch
from diff_queries import load_queries, strip_sql
from sqlglot.errors import ParseError, TokenError

import hetdb
from hetdb.errors import CatalogError, HetdbError, SqlError, UnsupportedError

# ---- running one statement -----------------------------------------------------------------------


def hetdb_outcome(con, sql: str):
    """("ok", table) | ("error", HetdbError) | ("crash", text with traceback)."""
    try:
        return "ok", con.sql(sql).arrow()
    except HetdbError as e:
        return "error", e
    except Exception as e:  # noqa: BLE001 - a crash is exactly what this suite looks for
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-4:])
        return "crash", f"{type(e).__name__}: {e}\n{tb}"


def duckdb_rejects(duck, sql: str, execute: bool = False) -> bool:
    """True when DuckDB refuses ``sql`` (binding only, unless ``execute``)."""
    return duckdb_verdict(duck, sql, execute) == "rejects"


def duckdb_verdict(duck, sql: str, execute: bool = True, timeout_s: float = 2.0) -> str:
    """"rejects", "accepts" (bound and, with ``execute``, ran) or "slow" (bound, still running after
    ``timeout_s``: e.g. a truncated query that became a cross product)."""
    try:
        duck.execute("EXPLAIN " + sql).fetchall()
    except Exception:  # noqa: BLE001 - any DuckDB error means "rejected"
        return "rejects"
    if not execute:
        return "accepts"
    timer = threading.Timer(timeout_s, duck.interrupt)
    timer.start()
    try:
        duck.sql(sql).fetchall()
        return "accepts"
    except Exception as e:  # noqa: BLE001
        return "slow" if "interrupt" in str(e).lower() else "rejects"
    finally:
        timer.cancel()


def is_syntax_error(sql: str) -> bool:
    try:
        sqlglot.parse(sql, read="duckdb")
        return False
    except (ParseError, TokenError):
        return True
    except Exception:  # noqa: BLE001 - sqlglot chokes on some garbage in other ways: still unreadable
        return True


def check_rejected(con, duck, sql: str, problems: list[str]) -> bool:
    """The core rule; returns True when the statement is malformed (DuckDB rejects it).

    Rejected by DuckDB -> hetdb must raise a HetdbError (a SqlError with line/column when sqlglot
    cannot parse it). Accepted -> hetdb must give DuckDB's answer or a HetdbError (UnsupportedError);
    statements DuckDB cannot finish quickly (cross products of truncated FROM lists) are only planned.
    """
    verdict = duckdb_verdict(duck, sql)
    if verdict == "slow":
        try:
            con.explain(sql)
        except HetdbError:
            pass
        except Exception as e:  # noqa: BLE001
            problems.append(f"CRASH in explain of {sql!r}: {type(e).__name__}: {e}")
        return False
    kind, value = hetdb_outcome(con, sql)
    if kind == "crash":
        problems.append(f"CRASH on {sql!r}:\n{value}")
    elif verdict == "rejects" and kind == "ok":
        problems.append(f"ANSWERED a statement DuckDB rejects: {sql!r}")
    elif verdict == "rejects" and is_syntax_error(sql):
        if not isinstance(value, SqlError) or value.line is None or value.column is None:
            problems.append(f"syntax error without line/column ({type(value).__name__}: {value}): {sql!r}")
    elif verdict == "accepts" and kind == "ok" and "limit" not in sql.lower():
        diff = mismatch(value, duck.sql(sql).to_arrow_table(), None)
        if diff:
            problems.append(f"WRONG ANSWER for a statement both accept: {sql!r}: {diff}")
    return verdict == "rejects"


def report(problems: list[str], label: str, checked: int) -> None:
    if problems:
        shown = "\n".join(problems[:40])
        more = f"\n... and {len(problems) - 40} more" if len(problems) > 40 else ""
        pytest.fail(f"{label}: {len(problems)} problems in {checked} statements\n{shown}{more}", pytrace=False)


@pytest.fixture
def con_for():
    opened = []

    def open_con(data):
        con = hetdb.connect(data.path, device="cpu")
        opened.append(con)
        return con

    yield open_con
    for con in opened:
        con.close()


# ---- corpora -------------------------------------------------------------------------------------

def truncations(sql: str, stride: int = 1) -> list[str]:
    """``sql`` cut after every ``stride``-th token (the complete statement excluded)."""
    tokens = sqlglot.tokenize(sql, read="duckdb")
    cuts = [t.end + 1 for t in tokens[:-1]][::stride]
    return [sql[:c] for c in cuts]


GARBAGE = ["(", ")", ",", ";", "select", "from", "where", "group", "by", "order", "having", "and", "or",
           "not", "=", "==", "<>", "+", "*", "'", '"', "@", "#", "$1", "?", "::", "[", "]", "{", "}",
           "between", "in", "like", "join", "on", "limit", "1e", "..", "\\", "case", "end", "as", "null"]


def garbage_statements(queries: dict[str, str], count: int, seed: int) -> list[str]:
    """Valid statements with one garbage token inserted at a random token boundary (seeded)."""
    rng = random.Random(seed)
    names = sorted(queries)
    out = []
    for _ in range(count):
        sql = strip_sql(queries[rng.choice(names)])
        tokens = sqlglot.tokenize(sql, read="duckdb")
        at = rng.choice(tokens).end + 1
        out.append(f"{sql[:at]} {rng.choice(GARBAGE)} {sql[at:]}")
    return out


def misspellings(queries: dict[str, str], names: set[str], limit: int) -> list[tuple[str, str]]:
    """(statement with one identifier misspelled, the right identifier) pairs."""
    out = []
    for _, text in sorted(queries.items()):
        sql = strip_sql(text)
        for name in sorted({t.text for t in sqlglot.tokenize(sql, read="duckdb")} & names):
            wrong = name[:-2] + name[-1] + name[-2] if len(name) > 3 else name + "x"  # swap last two
            if wrong in names or wrong == name:
                wrong = name + "z"
            bad = re.sub(rf"\b{re.escape(name)}\b", wrong, sql, count=1)
            out.append((bad, name))
            if len(out) >= limit:
                return out
    return out


def _identifiers(data) -> set[str]:
    names = set(data.arrow_schemas)
    for schema in data.arrow_schemas.values():
        names.update(schema.names)
    return names


# ---- tests ---------------------------------------------------------------------------------------

def test_truncated_ssb_statements(ssb_small, con_for) -> None:
    con = con_for(ssb_small)
    problems: list[str] = []
    statements = sorted({p for q in load_queries("ssb").values() for p in truncations(strip_sql(q))})
    rejected = sum(check_rejected(con, ssb_small.duck, s, problems) for s in statements)
    report(problems, "truncated SSB", len(statements))
    assert len(statements) >= 300 and rejected >= 200, (len(statements), rejected)


def test_truncated_tpch_statements(tpch_small, con_for) -> None:
    con = con_for(tpch_small)
    problems: list[str] = []
    queries = load_queries("tpch")
    # every token of a few queries with many constructs, every 4th token of the others
    dense = {"q01", "q04", "q13", "q16", "q22"}
    statements = sorted({p for name, q in queries.items()
                         for p in truncations(strip_sql(q), 1 if name in dense else 4)})
    rejected = sum(check_rejected(con, tpch_small.duck, s, problems) for s in statements)
    report(problems, "truncated TPC-H", len(statements))
    assert len(statements) >= 500 and rejected >= 300, (len(statements), rejected)


def test_garbage_tokens(ssb_small, tpch_small, con_for) -> None:
    problems: list[str] = []
    checked = rejected = 0
    for data, suite, seed in ((ssb_small, "ssb", 1), (tpch_small, "tpch", 2)):
        con = con_for(data)
        for sql in garbage_statements(load_queries(suite), 150, seed):
            rejected += check_rejected(con, data.duck, sql, problems)
            checked += 1
    report(problems, "garbage tokens", checked)
    assert checked == 300 and rejected >= 150, (checked, rejected)


def test_unknown_tables_and_columns_suggest_the_right_name(ssb_small, tpch_small, con_for) -> None:
    problems: list[str] = []
    checked = 0
    for data, suite in ((ssb_small, "ssb"), (tpch_small, "tpch")):
        con = con_for(data)
        for sql, right in misspellings(load_queries(suite), _identifiers(data), 80):
            kind, value = hetdb_outcome(con, sql)
            checked += 1
            assert duckdb_rejects(data.duck, sql), f"corpus error: DuckDB accepts {sql!r}"
            if kind == "crash":
                problems.append(f"CRASH on {sql!r}:\n{value}")
            elif kind == "ok":
                problems.append(f"ANSWERED a statement with an unknown name: {sql!r}")
            elif not isinstance(value, CatalogError):
                problems.append(f"{type(value).__name__} instead of CatalogError: {value} <- {sql!r}")
            elif right not in str(value):
                problems.append(f"CatalogError does not suggest {right!r}: {value}")
    report(problems, "unknown names", checked)
    assert checked >= 100


def test_unknown_table_message(ssb_small, con_for) -> None:
    con = con_for(ssb_small)
    with pytest.raises(CatalogError, match="lineorder"):
        con.sql("select count(*) from lineordr")
    with pytest.raises(CatalogError, match="lo_revenue"):
        con.sql("select sum(lo_revenu) from lineorder")


TYPE_ERRORS = [
    "select 'abc' + 1",
    "select c_custkey + 'abc' from customer",
    "select sum(c_name) from customer",
    "select avg(c_mktsegment) from customer",
    "select c_custkey from customer where c_custkey = 'abc'",
    "select date '1995-13-45'",
    "select cast('x' as integer)",
    "select c_custkey from customer where c_name",
    "select c_custkey, sum(c_acctbal) from customer",
    "select sum(sum(c_acctbal)) from customer",
    "select c_custkey from customer where sum(c_acctbal) > 1",
    "select count(*) from customer group by sum(c_acctbal)",
    "select c_custkey from customer order by 5",
    "select c_custkey from customer group by 3",
    "select c_custkey from customer limit 'a'",
    "select c_custkey from customer limit -1",
    "select c_custkey from customer, customer",
    "select c_custkey from customer a, customer b",
    "select x.c_custkey from customer",
    "select substring(c_name) from customer",
    "select nosuchfunction(c_name) from customer",
    "select c_custkey in (select c_custkey, c_name from customer) from customer",
    "select (select c_custkey, c_name from customer limit 1)",
    "select * from 'no/such/file.parquet'",
    "select c_custkey from customer where c_name like 5 + 'x'",
    "select extract(nosuchpart from o_orderdate) from orders",
    "select c_custkey from customer join orders",
    "select c_custkey from customer where exists (select)",
    "select c_custkey from customer where c_custkey between 1",
    "select c_name * 2 from customer",
    "select -c_name from customer",
    "select o_orderdate * 2 from orders",
    "select o_orderdate + o_orderdate from orders",
    "select c_custkey from customer group by c_name",
    "select c_custkey, count(*) from customer group by c_name having c_acctbal > 0",
    "with t as (select 1 as a) select b from t",
    "with t as (select 1 as a), t as (select 2 as a) select * from t",
    "select c_custkey from customer where c_custkey = (select c_custkey from customer)",
]


def test_type_and_binding_errors(tpch_small, con_for) -> None:
    con = con_for(tpch_small)
    problems: list[str] = []
    for sql in TYPE_ERRORS:
        assert duckdb_rejects(tpch_small.duck, sql, execute=True), f"corpus error: DuckDB accepts {sql!r}"
        kind, value = hetdb_outcome(con, sql)
        if kind != "error":
            problems.append(f"{'CRASH' if kind == 'crash' else 'ANSWERED'}: {sql!r}" +
                            (f"\n{value}" if kind == "crash" else f" -> {value.num_rows} rows"))
    report(problems, "type/binding errors", len(TYPE_ERRORS))


# Valid DuckDB, outside hetdb's documented coverage: UnsupportedError (or, if hetdb grew the feature,
# DuckDB's answer). Statements that are not queries at all must be refused with a typed error.
UNSUPPORTED = [
    "select n_name, row_number() over (order by n_name) from nation",
    "select n_name, sum(n_nationkey) over (partition by n_regionkey) from nation",
    "select r_regionkey, count(*) from nation, region where n_regionkey = r_regionkey "
    "group by rollup (r_regionkey)",
    "select n_regionkey, count(*) from nation group by grouping sets ((n_regionkey), ())",
    "select n_name from nation qualify row_number() over (order by n_name) < 3",
    "with recursive t(n) as (select 1 union all select n + 1 from t where n < 5) select * from t",
    "select {'a': 1}",
    "select * exclude (n_comment) from nation",
    "select string_agg(n_name, ',' order by n_name) from nation",
    "select count(*) filter (where n_regionkey = 1) from nation",
    "select distinct on (n_regionkey) n_name from nation order by n_regionkey, n_name",
    "select regexp_matches(n_name, '^A') from nation",
    "select * from generate_series(1, 3)",
    "select * from nation, lateral (select * from region where r_regionkey = n_regionkey)",
    "select * from nation n1 natural join nation n2",
    "select * from nation n1 join nation n2 using (n_regionkey)",
    "pivot nation on n_regionkey using count(*)",
]
# Statements hetdb refuses (CREATE/INSERT/UPDATE/DELETE/DROP/COPY/SET run: tests/api/test_statements.py).
NOT_QUERIES = [
    "pragma version",
    "attach 'x.db'",
    "begin transaction",
]


def test_unsupported_constructs_are_refused(tpch_small, con_for) -> None:
    con = con_for(tpch_small)
    problems: list[str] = []
    for sql in UNSUPPORTED:
        assert not duckdb_rejects(tpch_small.duck, sql, execute=True), f"corpus error: DuckDB rejects {sql!r}"
        kind, value = hetdb_outcome(con, sql)
        if kind == "crash":
            problems.append(f"CRASH on {sql!r}:\n{value}")
        elif kind == "error" and not isinstance(value, UnsupportedError):
            problems.append(f"{type(value).__name__} instead of UnsupportedError: {value} <- {sql!r}")
        elif kind == "ok":
            diff = mismatch(value, tpch_small.duck.sql(sql).to_arrow_table(), None)
            if diff:
                problems.append(f"WRONG ANSWER (should have been UnsupportedError): {sql!r}: {diff}")
    for sql in NOT_QUERIES:
        kind, value = hetdb_outcome(con, sql)
        if kind != "error":
            problems.append(f"{'CRASH' if kind == 'crash' else 'ANSWERED'} non-query {sql!r}: {value}")
    report(problems, "unsupported constructs", len(UNSUPPORTED) + len(NOT_QUERIES))
    assert tpch_small.row_counts["nation"] == 25  # nothing was modified


def test_every_unsupported_construct_is_named_at_once(tpch_small, con_for) -> None:
    con = con_for(tpch_small)
    sql = ("select n_name, {'a': 1}, histogram(n_nationkey), list_intersect([1], [n_nationkey]) "
           "from nation group by n_name")
    with pytest.raises(UnsupportedError) as info:
        con.sql(sql)
    message = str(info.value).lower()
    named = {"struct": "struct" in message,
             "list_intersect": "list_intersect()" in message,
             "histogram": "histogram()" in message}
    missing = [k for k, ok in named.items() if not ok]
    assert not missing, f"UnsupportedError does not name {missing}: {info.value}"


def test_syntax_error_carries_line_and_column(ssb_small, con_for) -> None:
    con = con_for(ssb_small)
    sql = "select d_year,\n  count(*)\nfrom date where d_year = = 1993\ngroup by d_year"
    with pytest.raises(SqlError) as info:
        con.sql(sql)
    err = info.value
    assert err.line == 3, f"line {err.line} (expected 3): {err}"
    assert err.column is not None and 20 <= err.column <= 30, f"column {err.column}: {err}"
    # an unterminated string literal
    with pytest.raises(SqlError) as info:
        con.sql("select d_year\nfrom date\nwhere d_month = 'May")
    assert info.value.line == 3 and info.value.column is not None, str(info.value)


ODD_INPUTS = [
    "", "   ", "\n\t", ";", ";;", "-- only a comment", "/* only a block comment */",
    "select", "select * from", "select (" * 50, "select " + "(" * 3000 + "1" + ")" * 3000,
    "select 1 from nation where " + " and ".join(["(n_nationkey = 1"] * 500) + ")" * 500,
    "select ☃ from nation", "select n_name from nation\x00", "select \x01 from nation",
    "select n_name from nation where n_name = 'unterminated", 'select "unterminated from nation',
    "select " + "x" * 10000 + " from nation", "selec n_name from nation", "select n_name frm nation",
    "select n_name from nation where", "select n_name from nation order by", "select n_name, from nation",
    "select n_name from nation group by", "select n_name from nation limit", "select * from nation)",
    "((select * from nation)", "select * from nation; select * from region x y",
    "select 1 1", "select 'a' 'b' 'c' from", "select 1e999999", "select 99999999999999999999999999999999999999999",
    "select n_name from nation where n_name like", "select n_name from nation where n_name in (",
    "select case from nation", "select case when then end from nation",
]


def test_odd_inputs_give_typed_errors(tpch_small, con_for) -> None:
    con = con_for(tpch_small)
    problems: list[str] = []
    for sql in ODD_INPUTS:
        kind, value = hetdb_outcome(con, sql)
        if kind == "crash":
            problems.append(f"CRASH on {sql[:80]!r}:\n{value}")
        elif kind == "ok" and duckdb_rejects(tpch_small.duck, sql, execute=True):
            problems.append(f"ANSWERED {sql[:80]!r} which DuckDB rejects")
    report(problems, "odd inputs", len(ODD_INPUTS))
