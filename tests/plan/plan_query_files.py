"""The benchmark query files shipped in the package, for planner tests."""

from __future__ import annotations

import glob
import os

QUERIES = os.path.join(os.path.dirname(__file__), "..", "..", "src", "hetdb", "bench", "queries")


def query_files(bench: str) -> list[str]:
    return sorted(glob.glob(os.path.join(QUERIES, bench, "*.sql")))
