"""SQL text -> statements: split at top-level ``;``, bind parameters (``?``, ``$1``, ``$name``) into
literals, and say what kind each statement is (query or one of the statements exec/ddl.py runs)."""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from hetdb.errors import SqlError
from hetdb.sql.parse import _DIALECT, parse


@dataclass(frozen=True)
class Statement:
    """One statement: its text (parameters bound), its kind and, except for queries, its tree."""

    text: str
    kind: str
    tree: exp.Expression | None = None


def sql_literal(value: Any) -> str:
    """A Python value as a DuckDB SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{value}' AS DOUBLE)"
        return repr(value) if "e" in repr(value) or "." in repr(value) else f"{value!r}.0"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):  # an aware datetime is an instant: TIMESTAMPTZ (as DuckDB)
        kind = "TIMESTAMP" if value.tzinfo is None else "TIMESTAMPTZ"
        return f"{kind} '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise SqlError(f"cannot use a parameter of type {type(value).__name__} (use None, bool, int, float, "
                   "Decimal, str, date or datetime)")


def _tokens(sql: str) -> list:
    try:
        return _DIALECT.tokenize(sql)
    except TokenError:
        parse(sql)  # raises the SqlError with the position of the bad quote
        raise SqlError("syntax error: the query text could not be tokenized") from None


def bind_parameters(sql: str, parameters: Any) -> str:
    """``sql`` with every placeholder replaced by the literal of its parameter: ``?`` takes the next
    item of a sequence, ``$n`` the n-th (1-based), ``$name`` the mapping's entry."""
    tokens = _tokens(sql)
    out: list[str] = []
    pos = 0
    nth = 0
    used = 0
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.token_type == TokenType.PLACEHOLDER and t.text == "?":
            if isinstance(parameters, dict):
                raise SqlError("'?' placeholders need a list of parameters, not a dict (or write $name)")
            if nth >= len(parameters):
                raise SqlError(f"the statement has more '?' placeholders than the {len(parameters)} "
                               "parameters given")
            out.append(sql[pos:t.start] + sql_literal(parameters[nth]))
            nth += 1
            used = max(used, nth)
            pos = t.end + 1
        elif t.token_type == TokenType.PARAMETER and i + 1 < len(tokens) and tokens[i + 1].start == t.end + 1:
            name = tokens[i + 1].text
            if name.isdigit():
                k = int(name)
                if isinstance(parameters, dict) or not 1 <= k <= len(parameters):
                    raise SqlError(f"parameter ${k} is not among the {len(parameters)} parameters given")
                value = parameters[k - 1]
                used = max(used, k)
            else:
                if not isinstance(parameters, dict) or name not in parameters:
                    raise SqlError(f"parameter ${name} needs a dict of parameters with key {name!r}")
                value = parameters[name]
                used += 1
            out.append(sql[pos:t.start] + sql_literal(value))
            pos = tokens[i + 1].end + 1
            i += 1
        i += 1
    out.append(sql[pos:])
    if not isinstance(parameters, dict) and used < len(parameters):
        raise SqlError(f"{len(parameters)} parameters were given but the statement uses {used}")
    return "".join(out)


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql`` (text between top-level ``;``), empty ones dropped."""
    pieces, start = [], 0
    for t in _tokens(sql):
        if t.token_type == TokenType.SEMICOLON:
            pieces.append(sql[start:t.start])
            start = t.end + 1
    pieces.append(sql[start:])
    return [p for p in pieces if p.strip()]


_KINDS = {exp.Create: "create", exp.Insert: "insert", exp.Drop: "drop", exp.Copy: "copy",
          exp.Describe: "describe", exp.Show: "show", exp.Summarize: "summarize", exp.Set: "set",
          exp.Update: "update", exp.Delete: "delete", exp.Pragma: "pragma"}


def classify(text: str) -> Statement:
    """One statement's kind; EXPLAIN and RESET (which sqlglot reads as commands) by their keyword."""
    words = text.strip().split(None, 2)
    head = words[0].upper() if words else ""
    if head == "EXPLAIN":
        rest = text.strip()[len(words[0]):].lstrip()
        analyze = rest[:7].upper() == "ANALYZE" and (len(rest) == 7 or not rest[7].isalnum())
        return Statement(rest[7:].lstrip() if analyze else rest, "explain_analyze" if analyze else "explain")
    if head == "RESET":
        return Statement(text, "reset")
    if head in ("VACUUM", "CHECKPOINT"):
        return Statement(text, "vacuum")
    if head in ("SELECT", "WITH", "FROM", "(", "VALUES", "TABLE") or head.startswith("("):
        return Statement(text, "query")
    try:
        trees = [t for t in _DIALECT.parser().parse(_DIALECT.tokenize(text), text) if t is not None]
    except (ParseError, TokenError):
        parse(text)  # the SqlError with line and column
        raise
    if len(trees) != 1:
        return Statement(text, "query")
    tree = trees[0]
    for cls, kind in _KINDS.items():
        if isinstance(tree, cls):
            return Statement(text, kind, tree)
    if isinstance(tree, exp.Command):
        raise SqlError(f"syntax error: cannot read statement starting with {tree.name!r}", 1, 1, head)
    return Statement(text, "query", tree)


def statements(sql: str, parameters: Any = None) -> list[Statement]:
    """Parse ``sql`` into statements, parameters bound; SqlError for empty text."""
    if not isinstance(sql, str) or not sql.strip():
        raise SqlError("empty query: write a SQL statement")
    if parameters is not None:
        if not isinstance(parameters, (list, tuple, dict)):
            raise SqlError("parameters must be a list/tuple (for ? and $1) or a dict (for $name)")
        sql = bind_parameters(sql, parameters)
    else:
        hit = _QUERY_TEXTS.get(sql)
        if hit is not None:
            return list(hit)
    parts = split_statements(sql)
    if not parts:
        raise SqlError("empty query: write a SQL statement")
    out = [classify(p) for p in parts]
    if parameters is None and all(st.kind == "query" for st in out):
        # a query runs from its text (the tree is for the other kinds: exec/ddl.py), so the same
        # text run again skips tokenising and parsing (TPC-H, whose texts start with a comment and
        # so were parsed whole: about 2.4 ms per query on the 2-core machine, on every run)
        if len(_QUERY_TEXTS) >= _MAX_QUERY_TEXTS:
            _QUERY_TEXTS.clear()
        _QUERY_TEXTS[sql] = tuple(Statement(st.text, "query") for st in out)
    return out


# query texts -> their statements (only texts whose statements are all queries)
_QUERY_TEXTS: dict[str, tuple[Statement, ...]] = {}
_MAX_QUERY_TEXTS = 512
