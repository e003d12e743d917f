"""A query's pages and bytes by path (cache/router.py), summed over its scans."""

from __future__ import annotations

from typing import Any

from hetdb.cache.router import RouteCounts


def scan_routes(ops: dict[int, Any]) -> RouteCounts:
    """The RouteCounts of every operator of a query (op_id -> OpStats) added up."""
    total = RouteCounts()
    for s in ops.values():
        if getattr(s, "routes", None):
            total.merge(s.routes)
    return total
