"""DuckDB's grammar where sqlglot's is more lenient.

sqlglot accepts statements DuckDB rejects: it drops empty list items (``a, , b``), swallows a stray
``AS`` after SELECT, takes a JOIN without ON/USING as a cross join, reads reserved keywords as bare
aliases (``SELECT x case``) and tokenizes ``1e`` as a number. A query DuckDB rejects must not get an
answer from hetdb, so the parser below is sqlglot's DuckDB parser with those holes closed, plus
checks over the token stream and the tree that raise sqlglot ParseErrors (parse.py turns them into
SqlError with line and column).

The keyword sets are DuckDB's (``duckdb_keywords()``), restricted to the positions DuckDB refuses them
in, as measured against DuckDB.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from hetdb.sql.host_aggs import FUNCTIONS as HOST_AGGREGATES

# DuckDB's reserved keywords: never an unquoted alias (column or table).
RESERVED = frozenset("""
all analyse analyze and any array as asc asymmetric both case cast check collate column constraint
create default deferrable desc describe distinct do else end except false fetch for foreign from group
having in initially intersect into lambda lateral leading limit not null offset on only or order pivot
pivot_longer pivot_wider placing primary qualify references returning select show some summarize
symmetric table then to trailing true union unique unpivot using variadic when where window with
""".split())

# Type/function-name keywords DuckDB refuses as an alias (with or without AS for tables, bare for
# columns).
_TYPE_FUNC = frozenset("""
anti asof at authorization binary by collation concurrently cross freeze full glob ilike inner is join
left like natural outer overlaps positional right semi similar tablesample unpack verbose
""".split())

# Unreserved keywords DuckDB refuses only as a *bare* column alias (``SELECT x year``).
_NO_BARE_COLUMN_ALIAS = frozenset("""
centuries century day days decade decades escape exclude export_state filter hour hours ignore
microsecond microseconds millennia millennium millisecond milliseconds minute minutes month months
over quarter quarters rename replace respect second seconds varying week weeks within without year
years precision
""".split())

BARE_COLUMN_ALIAS_REFUSED = RESERVED | _TYPE_FUNC | _NO_BARE_COLUMN_ALIAS
TABLE_ALIAS_REFUSED = RESERVED | _TYPE_FUNC | frozenset({"isnull", "notnull"})

# Tokens after which an item (never AS, never a comma) must come. DuckDB allows a trailing comma
# (``a, b,``) but no empty item between two commas or before the first item.
_ITEM_START = {TokenType.SELECT, TokenType.COMMA, TokenType.L_PAREN, TokenType.DISTINCT,
               TokenType.FROM}


class StrictDuckDB(DuckDB):
    """sqlglot's DuckDB dialect with DuckDB's stricter JOIN grammar. List indexes stay as written
    (1-based): sqlglot's DuckDB parser moves only the constant ones to 0-based."""

    INDEX_OFFSET = 0

    class Parser(DuckDB.Parser):
        FUNCTIONS = {**DuckDB.Parser.FUNCTIONS, **HOST_AGGREGATES}

        def parse(self, raw_tokens, sql=None):
            trees = super().parse(raw_tokens, sql)
            for tree in trees:
                for node in tree.walk() if tree is not None else ():
                    if isinstance(node, exp.Bracket):
                        # its index is DuckDB's 1-based one (INDEX_OFFSET = 0), which a tree printed
                        # as DuckDB SQL again (INSERT ... SELECT, views) must keep
                        node.set("offset", 1)
            return trees

        def _parse_join(self, skip_join_token: bool = False, parse_bracket: bool = False,
                        alias_tokens=None):
            comma = self._curr is not None and self._curr.token_type == TokenType.COMMA
            start = self._curr
            join = super()._parse_join(skip_join_token=skip_join_token, parse_bracket=parse_bracket,
                                       alias_tokens=alias_tokens)
            if join is None or comma or skip_join_token:
                return join
            kind = (join.args.get("kind") or "").upper()
            if join.args.get("on") is None and not join.args.get("using") \
                    and not join.args.get("method") and kind not in ("CROSS", "SEMI", "ANTI") \
                    and not isinstance(join.this, exp.Unnest):
                raise _error("JOIN needs an ON or USING condition (or write CROSS JOIN)", start, self.sql)
            return join


def check_tokens(tokens: list[Token], sql: str) -> None:
    """Token-level rules DuckDB enforces: numbers are numbers; AS and ',' follow an item."""
    prev: Token | None = None
    for tok in tokens:
        if tok.token_type == TokenType.NUMBER and not _is_number(tok.text):
            _raise(f"invalid number '{tok.text}'", tok, sql)
        after_start = prev is None or prev.token_type in _ITEM_START
        if tok.token_type == TokenType.ALIAS and after_start:
            _raise("AS must follow an expression", tok, sql)
        if tok.token_type == TokenType.COMMA and after_start:
            _raise("empty item in a comma-separated list", tok, sql)
        prev = tok


def check_tree(tree: exp.Expression, tokens: list[Token], sql: str) -> None:
    """Tree-level rules: no keyword as an alias where DuckDB refuses it; no empty GROUP BY; no
    duplicate CTE names."""
    starts = {t.start: i for i, t in enumerate(tokens)}
    for node in tree.walk():
        if isinstance(node, exp.Alias):
            ident = node.args.get("alias")
            if isinstance(ident, exp.Identifier) and not ident.quoted \
                    and ident.name.lower() in BARE_COLUMN_ALIAS_REFUSED:
                i = starts.get(ident.meta.get("start", -1))
                if i is None or i == 0 or tokens[i - 1].token_type != TokenType.ALIAS:
                    _raise_at(f"keyword '{ident.name}' cannot be an alias without AS; write AS "
                              f"{ident.name} or quote it", ident, tokens, i, sql)
        elif isinstance(node, exp.TableAlias):
            ident = node.this
            if isinstance(ident, exp.Identifier) and not ident.quoted \
                    and ident.name.lower() in TABLE_ALIAS_REFUSED:
                i = starts.get(ident.meta.get("start", -1))
                _raise_at(f"keyword '{ident.name}' cannot be a table alias; quote it",
                          ident, tokens, i, sql)
        elif isinstance(node, exp.Group):
            if not node.expressions and not node.args.get("all") and not any(
                    node.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals")):
                raise _error("GROUP BY needs at least one expression", None, sql)
        elif isinstance(node, exp.With):
            seen: set[str] = set()
            for cte in node.expressions:
                name = cte.alias.lower()
                if name in seen:
                    raise _error(f"duplicate CTE name '{cte.alias}' in WITH", None, sql)
                seen.add(name)


def _is_number(text: str) -> bool:
    t = text.replace("_", "")
    if t.lower().startswith(("0x", "0b")):
        return True
    try:
        float(t)
    except ValueError:
        return False
    return True


def _error(message: str, tok: Token | None, sql: str) -> ParseError:
    if tok is None:
        return ParseError.new(message, description=message)
    # sqlglot's Token.col is the token's last column: report where the token starts instead.
    before = sql[:tok.start]
    line, col = before.count("\n") + 1, tok.start - (before.rfind("\n") + 1) + 1
    return ParseError.new(f"{message}. Line {line}, Col: {col}.", description=message,
                          line=line, col=col, highlight=sql[tok.start:tok.end + 1])


def _raise(message: str, tok: Token, sql: str) -> None:
    raise _error(message, tok, sql)


def _raise_at(message: str, ident: exp.Identifier, tokens: list[Token], i: int | None, sql: str) -> None:
    raise _error(message, tokens[i] if i is not None else None, sql)
