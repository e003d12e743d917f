"""Expression nesting limit, as DuckDB's ``max_expression_depth`` (default 1000).

DuckDB refuses a query whose expressions nest deeper than 1,000 levels ("Max expression depth limit
of 1000 exceeded"), except that a chain of ANDs or ORs is one level (its parser flattens them).
hetdb applies the same rule, so it answers exactly the queries DuckDB answers; deeper ones get a
typed SqlError instead of an answer DuckDB would not give.
"""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError

MAX_EXPRESSION_DEPTH = 1000


def check_expression_depth(tree: exp.Expression) -> None:
    """SqlError if ``tree`` nests deeper than MAX_EXPRESSION_DEPTH (walked iteratively: the trees
    this refuses are the ones too deep to walk recursively)."""
    stack: list[tuple[exp.Expression, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            raise SqlError(f"expression nested more than {MAX_EXPRESSION_DEPTH} levels deep (DuckDB's "
                           f"max_expression_depth limit, which hetdb shares): simplify the expression")
        for child in node.iter_expressions():
            # an AND inside an AND (an OR inside an OR) continues one flat chain; a CASE's WHEN
            # branches are part of the CASE level (as in DuckDB)
            flat = (isinstance(node, exp.Connector) and type(child) is type(node)) or (
                isinstance(node, exp.Case) and isinstance(child, exp.If))
            stack.append((child, depth if flat else depth + 1))
