"""``USING SAMPLE`` (after FROM and its joins, before WHERE, as DuckDB) and ``TABLESAMPLE`` (on one
FROM item): sqlglot's TableSample -> plan/sample.py's Sample node."""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.logical import Node
from hetdb.plan.sample import Sample


def _number(node: exp.Expression | None, what: str) -> float:
    neg = isinstance(node, exp.Neg)
    lit = node.this if neg else node
    if not isinstance(lit, exp.Literal) or lit.is_string:
        raise UnsupportedError(f"{what} that is not a constant number")
    v = float(lit.this)
    return -v if neg else v


def sample(plan: Node, node: exp.TableSample) -> Node:
    """``plan`` sampled as ``node`` says."""
    for k in ("bucket_numerator", "bucket_denominator", "bucket_field"):
        if node.args.get(k) is not None:
            raise UnsupportedError("TABLESAMPLE BUCKET")
    method = node.args.get("method")
    method = method.name.upper() if method is not None else "SYSTEM"
    if method not in ("SYSTEM", "BERNOULLI", "RESERVOIR"):
        raise UnsupportedError(f"sampling method {method} (system, bernoulli, reservoir)")
    seed_node = node.args.get("seed")
    seed = None
    if isinstance(seed_node, exp.Expression):
        s = _number(seed_node, "REPEATABLE with a seed")
        if s != int(s) or s < 0:
            raise SqlError(f"REPEATABLE needs a non-negative integer seed, got {seed_node.sql(dialect='duckdb')}")
        seed = int(s)
    if node.args.get("size") is not None:
        n = _number(node.args["size"], "a sample size")
        if n != int(n) or n < 0:
            raise SqlError(f"a sample of {node.args['size'].sql(dialect='duckdb')} rows (a whole number is needed)")
        return Sample(plan, rows=int(n), seed=seed)
    p = _number(node.args.get("percent"), "a sample percentage")
    if not 0 <= p <= 100:
        raise SqlError(f"Sample sample_size {p:f} out of range, must be between 0 and 100")
    return Sample(plan, percent=p, exact=method == "RESERVOIR", seed=seed)
