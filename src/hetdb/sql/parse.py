"""SQL text -> one sqlglot tree (DuckDB dialect), with parse errors turned into SqlError(line, column)."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from hetdb.errors import SqlError
from hetdb.sql.depth import check_expression_depth
from hetdb.sql.strict import StrictDuckDB, check_tokens, check_tree

_DIALECT = StrictDuckDB()


def _position(sql: str, offset: int) -> tuple[int, int]:
    before = sql[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _unterminated_quote(sql: str) -> int | None:
    """Offset of a quote that is never closed (the usual cause of a tokenizer error)."""
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c in ("'", '"'):
            j = i + 1
            while j < n:
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # doubled quote inside a string
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                return i
            i = j + 1
            continue
        i += 1
    return None


def parse(sql: str) -> exp.Expression:
    """Parse exactly one statement; raise SqlError naming line, column and the offending text."""
    if not isinstance(sql, str) or not sql.strip():
        raise SqlError("empty query: write a SELECT statement")
    try:
        tokens = _DIALECT.tokenize(sql)
        check_tokens(tokens, sql)
        trees = [t for t in _DIALECT.parser().parse(tokens, sql) if t is not None]
        for t in trees:
            check_tree(t, tokens, sql)
            check_expression_depth(t)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        desc = err.get("description") or str(e)
        text = err.get("highlight") or None
        if re.match(r"Required keyword: '\w+' missing for <class", desc) and err.get("line"):
            # sqlglot names its node class (TimestampTrunc); the user wrote date_trunc(...)
            name = _open_call(sql, err["line"], err.get("col") or 1)
            if name:
                desc = f"{name}() is missing an argument"
        raise SqlError(f"syntax error: {desc}", err.get("line"), err.get("col"), text) from None
    except TokenError:
        off = _unterminated_quote(sql)
        if off is not None:
            line, col = _position(sql, off)
            raise SqlError("syntax error: unterminated quoted string", line, col,
                           sql[off:off + 20]) from None
        raise SqlError("syntax error: the query text could not be tokenized") from None
    except (ValueError, TypeError) as e:  # sqlglot raises these on some garbage input
        raise SqlError(f"syntax error: {e}") from None
    if not trees:
        raise SqlError("empty query: write a SELECT statement")
    if len(trees) > 1:
        raise SqlError(f"expected one statement, got {len(trees)}: run them one at a time")
    tree = trees[0]
    if "->" in _without_strings(sql) and any(isinstance(n, exp.Lambda) for n in tree.walk()):
        raise SqlError("lambda arrows (x -> ...) are deprecated and refused by DuckDB 2.0: write "
                       "lambda x: ...")
    _keep_written_names(tree, sql, tokens)
    if isinstance(tree, exp.Command):
        raise SqlError(f"syntax error: cannot read statement starting with {tree.name!r}", 1, 1,
                       sql.strip().split()[0])
    return tree


def _open_call(sql: str, line: int, col: int) -> str | None:
    """The name of the innermost function call still open at (line, col) of ``sql``."""
    lines = sql.split("\n")
    offset = sum(len(x) + 1 for x in lines[:line - 1]) + col - 1
    depth = 0
    text = _without_strings(sql[:offset])
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            if depth == 0:
                m = re.search(r"(\w+)\s*$", text[:i])
                return m.group(1) if m else None
            depth -= 1
    return None


def _keep_written_names(tree: exp.Expression, sql: str, tokens: list) -> None:
    """Record each function's name as the user spelled it (``meta['written']``): sqlglot reads several
    spellings into one node (variance and var_samp, log2 and log(2, x)); result column names and
    refusals use the user's (sql/names.py). Literals keep their text too (INTERVAL '2 hours' becomes
    INTERVAL '2' HOURS). ``tokens``: the parse's tokens of ``sql``. One walk of the tree (in text
    order) collects every kind of node recorded here."""
    pows: list[exp.Expression] = []
    ordered: list[exp.Expression] = []
    unpositioned: dict[type, list[exp.Expression]] = {cls: [] for cls, _ in _UNPOSITIONED}
    for node in tree.walk(bfs=False):
        if isinstance(node, exp.Func | exp.Literal) and "start" in node.meta:
            node.meta["written"] = sql[node.meta["start"]:node.meta["end"] + 1]
        elif isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal) and node.args.get("unit"):
            value, unit = re.escape(node.this.name), re.escape(node.args["unit"].name)
            # the whole quoted text: sqlglot drops a clock part after the unit ('2 days -01:00:00')
            m = re.search(rf"interval\s*('\s*{value}\s*{unit}(?:\s+[-+]?\d+:[^']*)?\s*')", sql, re.IGNORECASE)
            if m:
                node.this.meta["written"] = m.group(1)
        if isinstance(node, exp.Pow) and "start" not in node.meta:
            pows.append(node)
        elif isinstance(node, exp.Ordered):
            ordered.append(node)
        elif type(node) in unpositioned:
            unpositioned[type(node)].append(node)
    _keep_written_orders(ordered, tokens)
    if not pows and not any(unpositioned.values()):
        return
    text = _without_strings(sql)
    ops = re.findall(r"\*\*|\^", text)
    if pows and len(pows) == len(ops):  # x ** y and x ^ y (DuckDB names them so; pow(x, y) as written)
        for node, op in zip(pows, ops):
            node.meta["operator"] = op
    for cls, pattern in _UNPOSITIONED:
        # sqlglot keeps no position for these: the spellings in text order, matched to the nodes in
        # the tree's (text) order when both count the same
        nodes = unpositioned[cls]
        if not nodes:
            continue
        names = re.findall(pattern, text, re.IGNORECASE)
        if len(names) == len(nodes):
            for node, name in zip(nodes, names):
                node.meta["written"] = name


def _keep_written_orders(nodes: list[exp.Expression], tokens: list) -> None:
    """Record on each ORDER BY key (``exp.Ordered``, ``nodes`` in tree order) the direction and NULLS
    order the user wrote (``meta['written_order']``, e.g. ``"ASC NULLS FIRST"`` or ``""``): DuckDB's
    names print exactly those. sqlglot keeps no position for keys: the keys in token order, matched
    to the nodes in tree order when both count the same."""
    if not nodes:
        return
    keys: list[str] = []
    open_lists: list[tuple[int, list[str]]] = []  # (paren depth of an ORDER BY list, words of its key)
    depth = 0
    for i, tok in enumerate(tokens):
        kind = tok.token_type.name
        if kind == "ORDER_BY":
            open_lists.append((depth, []))
            continue
        if kind == "L_PAREN":
            depth += 1
        elif kind == "R_PAREN":
            depth -= 1
        if not open_lists:
            continue
        at, words = open_lists[-1]
        if (kind == "R_PAREN" and depth < at) or (kind == "COMMA" and depth == at):
            keys.append(" ".join(words))
            words.clear()
            if kind == "R_PAREN":
                open_lists.pop()
        elif depth == at and kind in ("ASC", "DESC"):
            words.append(kind)
        elif depth == at and tok.text.upper() == "NULLS" and i + 1 < len(tokens):
            words.append("NULLS " + tokens[i + 1].text.upper())
    while open_lists:
        keys.append(" ".join(open_lists.pop()[1]))
    if len(nodes) == len(keys):
        for node, key in zip(nodes, keys):
            node.meta["written_order"] = key


_UNPOSITIONED = ((exp.ArgMax, r"\b(arg_max|argmax|max_by)\s*\("), (exp.ArgMin, r"\b(arg_min|argmin|min_by)\s*\("),
                 (exp.GroupConcat, r"\b(string_agg|listagg|group_concat)\s*\("))


def _without_strings(sql: str) -> str:
    return re.sub(r"'(?:[^']|'')*'", "''", sql)
