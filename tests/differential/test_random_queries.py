"""Random queries (hypothesis) over the SSB, TPC-H and NULL-table schemas: hetdb must agree with DuckDB.

At least 500 queries per run (derandomized, so CI runs the same ones every time). A failure prints
the SQL, what differs, and the first rows of both answers; hypothesis then shrinks it to a small query.
Set HETDB_RANDOM_EXAMPLES to scale the number of queries per schema (e.g. 10 for a long soak) and
HETDB_RANDOM_SHRINK=1 to have hypothesis shrink a failing query to a minimal one.
"""

from __future__ import annotations

import os

import pytest
from diff_check import run_differential
from diff_querygen import (
    NULLS_FKS,
    NULLS_ROOTS,
    SSB_FKS,
    SSB_ROOTS,
    TPCH_FKS,
    TPCH_ROOTS,
    QueryGen,
    build_schema,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("HETDB_RANDOM_EXAMPLES", "1"))
EXAMPLES = {"ssb": int(170 * SCALE), "tpch": int(170 * SCALE), "nulls": int(200 * SCALE)}
MIN_TOTAL = 500
assert sum(EXAMPLES.values()) >= MIN_TOTAL or SCALE < 1

# Shrinking a failure can take minutes (hypothesis allows itself 5); CI reports the failing query as
# drawn. HETDB_RANDOM_SHRINK=1 shrinks it to a minimal query when debugging.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + (
    [Phase.shrink] if os.environ.get("HETDB_RANDOM_SHRINK") else [])
_SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=False, phases=_PHASES,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


class Tally:
    """Counts of one test's examples (hypothesis calls the body once per example)."""

    def __init__(self) -> None:
        self.compared = 0
        self.nonempty = 0


def _check_one(data, gen_schema, dataset, run, tally: Tally) -> None:
    query = QueryGen(data, gen_schema).query()
    expected = dataset.reference(query.sql)  # the generator only writes queries DuckDB accepts
    outcome = run_differential(f"random {gen_schema.name}", query.sql, run, expected, query.ordering,
                               query.tolerances)
    if outcome.failure:
        raise AssertionError(outcome.failure)
    tally.compared += 1
    tally.nonempty += expected.num_rows > 0


def _run_random(name: str, dataset, fks, roots, hetdb_runner) -> Tally:
    gen_schema = build_schema(dataset, fks, roots)
    run = hetdb_runner(dataset.path, device="cpu")
    tally = Tally()

    @settings(max_examples=EXAMPLES[name], **_SETTINGS)
    @given(data=st.data())
    def body(data) -> None:
        _check_one(data, gen_schema, dataset, run, tally)

    body()
    return tally


@pytest.mark.parametrize("schema_name", ["ssb", "tpch", "nulls"])
def test_random_queries_match_duckdb(schema_name, request, hetdb_runner) -> None:
    dataset, fks, roots = {
        "ssb": ("ssb_small", SSB_FKS, SSB_ROOTS),
        "tpch": ("tpch_small", TPCH_FKS, TPCH_ROOTS),
        "nulls": ("nulls_db", NULLS_FKS, NULLS_ROOTS),
    }[schema_name]
    tally = _run_random(schema_name, request.getfixturevalue(dataset), fks, roots, hetdb_runner)
    # hypothesis runs at least max_examples unless it stops early on a failure (which raised above)
    assert tally.compared >= EXAMPLES[schema_name], f"only {tally.compared} queries compared"
    assert tally.nonempty >= tally.compared // 3, f"only {tally.nonempty} of {tally.compared} answers non-empty"
