"""A query text run again is not tokenised again (sql/statements.py keeps query texts' statements);
texts with other statements, or with parameters, are parsed each time."""

from __future__ import annotations

import pytest

from hetdb.errors import SqlError
from hetdb.sql import statements as S


def test_query_text_is_parsed_once(monkeypatch) -> None:
    sql = "-- a comment first: sqlglot parses the text\nselect 1 as x; select 2 as y"
    first = S.statements(sql)
    assert [(st.text.strip(), st.kind) for st in first] == [
        ("-- a comment first: sqlglot parses the text\nselect 1 as x", "query"), ("select 2 as y", "query")]

    def refuse(_sql):
        raise AssertionError("tokenised again")

    monkeypatch.setattr(S, "split_statements", refuse)
    again = S.statements(sql)
    assert [(st.text, st.kind, st.tree) for st in again] == [(st.text, st.kind, None) for st in first]


def test_other_statements_and_parameters_are_parsed_each_time(monkeypatch) -> None:
    ddl = "CREATE TABLE t_statement_texts (a INTEGER)"
    assert S.statements(ddl)[0].tree is not None
    with_params = "SELECT ? AS p"
    assert S.statements(with_params, [5])[0].text == "SELECT 5 AS p"
    calls = []
    split = S.split_statements

    def spy(sql):
        calls.append(sql)
        return split(sql)

    monkeypatch.setattr(S, "split_statements", spy)
    assert S.statements(ddl)[0].kind == S.statements(ddl)[0].kind
    assert S.statements(with_params, [6])[0].text == "SELECT 6 AS p"
    assert len(calls) == 3
    with pytest.raises(SqlError):
        S.statements("   ")
