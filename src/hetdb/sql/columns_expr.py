"""DuckDB's ``COLUMNS(...)`` in a SELECT list: the item is repeated once per matching column, each
``COLUMNS(...)`` in it replaced by that column; every copy is named after its column (or the item's
alias). Selectors: ``*`` (every column, as ``*``), a regular expression (``COLUMNS('^x')``, a
column matches where the pattern is found in its name, case-sensitive, as DuckDB's RE2 search),
a list of names (``COLUMNS(['a', 'b'])``)."""

from __future__ import annotations

import re

from sqlglot import exp

from hetdb.errors import CatalogError, SqlError, UnsupportedError


def _matching(selector: exp.Expression, columns: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    if isinstance(selector, exp.Star):
        return columns
    if isinstance(selector, exp.Literal) and selector.is_string:
        try:
            pattern = re.compile(selector.this)
        except re.error as e:
            raise SqlError(f"COLUMNS('{selector.this}'): not a regular expression ({e})") from None
        hits = [c for c in columns if pattern.search(c[1])]
        if not hits:
            raise CatalogError(f"COLUMNS('{selector.this}'): no column name matches the regular expression")
        return hits
    if isinstance(selector, exp.Array) and all(isinstance(x, exp.Literal) and x.is_string for x in selector.expressions):
        out = []
        for x in selector.expressions:
            hit = [c for c in columns if c[1].lower() == x.this.lower()]
            if not hit:
                raise CatalogError(f"COLUMNS([...]): no column '{x.this}'")
            out.extend(hit)
        return out
    raise UnsupportedError(f"COLUMNS({selector.sql(dialect='duckdb')}) (COLUMNS(*), COLUMNS('regex') and "
                           "COLUMNS(['name', ...]) are supported)")


def expand(node: exp.Expression, columns: list[tuple[str | None, str]]) -> list[tuple[str, exp.Expression]]:
    """(output name, item) per column the item's COLUMNS(...) selects; ``columns``: (table alias or
    None when the name is unique, name) of the FROM clause, in order."""
    found = list(node.find_all(exp.Columns))
    texts = {c.this.sql(dialect="duckdb") for c in found}
    if len(texts) != 1:
        raise UnsupportedError("several different COLUMNS(...) selectors in one SELECT item")
    alias = node.alias if isinstance(node, exp.Alias) else None
    out = []
    for table, name in _matching(found[0].this, columns):
        def swap(n: exp.Expression, table=table, name=name) -> exp.Expression:
            return exp.column(name, table=table, quoted=True) if isinstance(n, exp.Columns) else n
        out.append((alias or name, node.copy().transform(swap)))
    return out
