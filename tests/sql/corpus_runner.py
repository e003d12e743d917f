"""A small sqllogictest-style runner for ``tests/sql/corpus/*.test``.

File format: cases separated by blank lines; ``#`` lines are comments.

    query [ordered]
    SELECT ...            (one statement, any number of lines)
    ----                  (optional: literal expected rows follow, cells separated by " | ",
    1 | NULL | abc         NULL for NULL; without them DuckDB's answer is the expected one)

    error ErrorClassName
    SELECT ...
    ----
    text the message must contain

    statement
    SET TimeZone = 'Europe/Berlin'   (run on hetdb and on DuckDB; the file's later cases see it)

``ordered`` compares rows in order (the query has a total ORDER BY), otherwise as multisets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from hetdb.bench.compare import compare_tables

CORPUS_DIR = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Case:
    kind: str             # "query" | "error" | "statement"
    sql: str
    ordered: bool = False
    expected: tuple[tuple[str, ...], ...] | None = None  # literal rows
    error: str = ""       # error class name
    message: str = ""
    line: int = 0


def parse(path: Path) -> list[Case]:
    cases: list[Case] = []
    blocks: list[tuple[int, list[str]]] = []
    cur: list[str] = []
    start = 0
    for no, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.rstrip()
        if line.startswith("#"):
            continue
        if not line:
            if cur:
                blocks.append((start, cur))
            cur = []
            continue
        if not cur:
            start = no
        cur.append(line)
    if cur:
        blocks.append((start, cur))
    for start, lines in blocks:
        head = lines[0].split()
        body = lines[1:]
        sep = body.index("----") if "----" in body else len(body)
        sql = "\n".join(body[:sep])
        after = body[sep + 1:]
        if head[0] == "query":
            expected = tuple(tuple(c.strip() for c in r.split(" | ")) for r in after) if sep < len(body) else None
            cases.append(Case("query", sql, "ordered" in head[1:], expected, line=start))
        elif head[0] == "statement":
            cases.append(Case("statement", sql, line=start))
        elif head[0] == "error":
            cases.append(Case("error", sql, error=head[1], message="\n".join(after), line=start))
        else:
            raise ValueError(f"{path.name}:{start}: unknown case kind {head[0]!r}")
    return cases


def _cell(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float) and v.is_integer():
        return str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def run_case(case: Case, con, duck) -> str | None:
    """None when hetdb answers ``case`` as expected, else what went wrong."""
    where = f"line {case.line}: {case.sql}"
    if case.kind == "statement":
        try:
            con.execute(case.sql)
        except Exception as e:  # noqa: BLE001 - reported as the case's failure
            return f"{where}\n  hetdb raised {type(e).__name__}: {e}"
        duck.execute(case.sql)
        return None
    if case.kind == "error":
        try:
            con.sql(case.sql)
        except Exception as e:  # noqa: BLE001 - the class is checked by name below
            if type(e).__name__ != case.error or case.message not in str(e):
                return f"{where}\n  expected {case.error} containing {case.message!r}, got {type(e).__name__}: {e}"
            return None
        return f"{where}\n  expected {case.error}, the query succeeded"
    try:
        actual = con.sql(case.sql).arrow()
    except Exception as e:  # noqa: BLE001 - reported as the case's failure
        return f"{where}\n  hetdb raised {type(e).__name__}: {e}"
    if case.expected is not None:
        got = [tuple(_cell(v) for v in r.values()) for r in actual.to_pylist()]
        want = list(case.expected)
        if not case.ordered:
            got, want = sorted(got), sorted(want)
        return None if got == want else f"{where}\n  got {got}\n  expected {want}"
    expected: pa.Table = duck.sql(case.sql).to_arrow_table()
    if actual.schema.types != expected.schema.types and any(pa.types.is_list(t) for t in expected.schema.types):
        return f"{where}\n  types {actual.schema.types} vs {expected.schema.types} expected"
    diff = compare_tables(_lists_as_text(actual), _lists_as_text(expected), case.ordered)
    return None if diff is None else f"{where}\n  {diff}"


def _lists_as_text(table: pa.Table) -> pa.Table:
    """LIST columns as the text of their Python values (compared exactly; Arrow cannot sort lists)."""
    for i, t in enumerate(table.schema.types):
        if pa.types.is_list(t):
            text = [None if v is None else repr(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, table.schema.names[i], pa.array(text, pa.string()))
    return table
