"""Run a whole benchmark suite on hetdb against DuckDB and collect every mismatch (not just the first)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from diff_check import Ordering, run_differential
from diff_data import Dataset
from diff_queries import DEFAULT_TOL


@dataclass
class SuiteReport:
    compared: int = 0
    nonempty: int = 0
    failures: list[str] = field(default_factory=list)

    def summary(self, label: str) -> str:
        return (f"{label}: {len(self.failures)} of {self.compared + self.errors} queries failed\n\n"
                + "\n\n".join(self.failures))

    @property
    def errors(self) -> int:
        return sum(1 for f in self.failures if "hetdb raised" in f or "hetdb crashed" in f)


def run_suite(label: str, data: Dataset, queries: dict[str, str], orderings: dict[str, Ordering],
              run_hetdb: Callable[[str], pa.Table], tolerances: dict[str, float] | None = None,
              expected: dict[str, pa.Table] | None = None) -> SuiteReport:
    """Compare every query of ``queries`` on hetdb with DuckDB over the same data.

    ``expected`` caches DuckDB's answers (name -> table) between configurations of the same data.
    """
    report = SuiteReport()
    for name, sql in queries.items():
        if expected is not None and name in expected:
            truth = expected[name]
        else:
            truth = data.reference(sql)
            if expected is not None:
                expected[name] = truth
        outcome = run_differential(f"{label} {name}", sql, run_hetdb, truth, orderings[name],
                                   (tolerances or {}).get(name, DEFAULT_TOL))
        report.compared += outcome.compared
        report.nonempty += outcome.compared and outcome.rows > 0
        if outcome.failure:
            report.failures.append(outcome.failure)
    return report
