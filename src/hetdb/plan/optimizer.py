"""The optimizer: an ordered list of small named passes, each switchable off by name
(``Options.disabled_passes``) and each verified to keep the plan's output schema and structure."""

from __future__ import annotations

from collections.abc import Callable

from hetdb.errors import HetdbError
from hetdb.plan.cardinality import Estimator
from hetdb.plan.logical import Node
from hetdb.plan.passes import (
    build_side,
    bushy_joins,
    constant_folding,
    count_pushdown,
    join_order,
    limit_pushdown,
    outer_join_simplification,
    predicate_pushdown,
    projection_pruning,
    semi_build_side,
    semi_join_pushdown,
    semi_join_reduction,
    single_join_pushdown,
)
from hetdb.plan.validate import validate


class PlanningTables:
    """The database as one optimization sees it: each table's reader is looked up once (a lookup
    reads the table's CURRENT file and stats its version), so every pass and estimate plans against
    the same committed version; everything else is the database's own."""

    def __init__(self, db) -> None:
        self._db = db
        self._readers: dict[str, object] = {}

    def table(self, name: str):
        reader = self._readers.get(name)
        if reader is None:
            reader = self._readers[name] = self._db.table(name)
        return reader

    def __getattr__(self, name: str):
        return getattr(self._db, name)


class PassContext:
    """What passes may use: the database (statistics, samples) and the connection's options."""

    def __init__(self, db, options) -> None:
        self.db = PlanningTables(db) if db is not None else None
        self.options = options

    def estimator(self) -> Estimator:
        # Fresh per pass: estimates are cached by node identity, and passes build new nodes.
        # (GPU plans keep the distinct counts their fused pipelines were tuned on: see Estimator)
        return Estimator(self.db, refined=getattr(self.options, "device", "cpu") != "gpu")


PASSES: list[tuple[str, Callable[[Node, PassContext], Node]]] = [
    (constant_folding.NAME, constant_folding.run),
    (outer_join_simplification.NAME, outer_join_simplification.run),
    (predicate_pushdown.NAME, predicate_pushdown.run),
    (projection_pruning.NAME, projection_pruning.run),
    (semi_join_pushdown.NAME, semi_join_pushdown.run),
    (single_join_pushdown.NAME, single_join_pushdown.run),
    (join_order.NAME, join_order.run),
    (bushy_joins.NAME, bushy_joins.run),
    (build_side.NAME, build_side.run),
    (count_pushdown.NAME, count_pushdown.run),
    (semi_join_reduction.NAME, semi_join_reduction.run),
    (semi_build_side.NAME, semi_build_side.run),
    ("late_projection_pruning", projection_pruning.run_late),
    (limit_pushdown.NAME, limit_pushdown.run),
]
PASS_NAMES = tuple(name for name, _ in PASSES)


def optimize(plan: Node, db, options=None) -> Node:
    """Apply PASSES in order minus ``options.disabled_passes``; raise HetdbError for an unknown pass
    name or if a pass changed the output schema or broke the plan (an internal error)."""
    disabled = frozenset(getattr(options, "disabled_passes", frozenset()) or ())
    unknown = sorted(disabled - set(PASS_NAMES))
    if unknown:
        raise HetdbError(f"unknown optimizer pass(es) {', '.join(unknown)}; "
                         f"passes are: {', '.join(PASS_NAMES)}")
    ctx = PassContext(db, options)
    schema = plan.schema
    checked: dict = {}  # nodes validated after an earlier pass (most passes change few nodes)
    for name, fn in PASSES:
        if name in disabled:
            continue
        new = fn(plan, ctx)
        if new.schema != schema:
            raise HetdbError(f"internal error: optimizer pass {name} changed the output schema")
        validate(new, f"optimizer pass {name}", checked)
        plan = new
    return plan
