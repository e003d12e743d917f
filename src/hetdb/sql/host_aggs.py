"""DuckDB aggregates that sqlglot reads as anonymous functions, given nodes of their own so that the
binder treats them as aggregates: product(x), fsum(x) (also kahan_sum / sumkahan) and entropy(x).

They are computed like sql/holistic.py's aggregates: per group by the window operator's host
statistics (``exec/operators/window_stats.py``) over the whole partition, then taken by the hash
aggregation. product and fsum cast their argument to DOUBLE and return DOUBLE (NULL over no non-NULL
value); fsum is Kahan's compensated sum, as DuckDB's. entropy(x) is the base-2 entropy of the
frequencies of the non-NULL values of any type, 0.0 (never NULL) over none, as DuckDB.
"""

from __future__ import annotations

from sqlglot import exp


class Product(exp.Expression, exp.AggFunc):
    pass


class Fsum(exp.Expression, exp.AggFunc):
    _sql_names = ["FSUM", "KAHAN_SUM", "SUMKAHAN"]


class Entropy(exp.Expression, exp.AggFunc):
    pass


NODES = (Product, Fsum, Entropy)

# parser entries (sql/strict.py): DuckDB's spellings -> the nodes above
FUNCTIONS = {name: cls.from_arg_list for cls in NODES for name in cls.sql_names()}

# the window operator's op for each node
OPS = {Product: "product", Fsum: "fsum", Entropy: "entropy"}
