"""The page accesses GPU scans of a query make, from the real planner over a real database (no GPU,
no data read): for ``cache/replay.py``.

Per query: the physical plan (the same planner and optimizer a GPU connection uses: planning does
not depend on the device), its pipelines in the order the engine runs them, and for each one whose
source is a stored-table scan what a GPU scan streams: the row groups zone maps cannot rule out
(``TableScan.verdict``, as ``plan_device_scan``), every column of the scan in each (a GPU scan
reads whole pages of all its columns), with the device bytes a page holds once delivered
(``cache/pages.py``: decoded, or as stored with ``gpu_compressed_cache``) and the bytes it moves
over the link (the stored page), and the dictionaries of its string columns.

``scale`` turns a trace of a small database into the page sizes of a larger scale factor from the
manifest alone: each table's rows grow by a factor, pages stay ``rows_per_page`` rows, and a new page
has the bytes per row of the source page it copies (cyclically).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from hetdb.cache.base import PageKey
from hetdb.cache.pages import page_info
from hetdb.cache.replay import PageRef, QueryRef, ScanRef


def query_trace(con: Any, name: str, sql: str, compressed: bool | None = None) -> QueryRef:
    """The GPU scans of ``sql`` on connection ``con`` (any device), in execution order, with the
    device bytes of pages as the GPU cache holds them under ``compressed`` (default: the
    connection's ``gpu_compressed_cache``; pages kept as stored hold fewer bytes than decoded ones,
    which is what decides what fits)."""
    from hetdb.exec.operators.scan import TableScan

    if compressed is None:
        compressed = bool(con.options.gpu_compressed_cache)
    engine = con._get_engine()
    physical = engine.planned(sql)[0].physical
    ctx = SimpleNamespace(options=con.options)
    scans = []
    for pipe in physical.pipelines:
        op = pipe.source
        if not isinstance(op, TableScan):
            continue
        reader = engine.db.table(op.scan.table)
        columns = list(dict.fromkeys(op.scan.column_names))
        rgs = []
        for rg in range(reader.num_row_groups):
            if op.verdict(ctx, reader, rg) == "skip":
                continue
            infos = [page_info(reader, c, rg, compressed) for c in columns]
            rgs.append([PageRef(i.key, i.device_bytes, i.location.length) for i in infos])
        dicts = []
        for c in columns:
            d = reader.dictionary(c) if reader.column(c).dtype.kind == "string" else None
            if d is not None:
                nbytes = int(d.offsets.nbytes + d.chars.nbytes)
                dicts.append(PageRef(PageKey.dictionary(reader.name, reader.version, c), nbytes, nbytes))
        scans.append(ScanRef(reader.name, rgs, dicts))
    return QueryRef(name, scans)


def suite_trace(con: Any, queries: list[tuple[str, str]], compressed: bool | None = None) -> list[QueryRef]:
    return [query_trace(con, name, sql, compressed) for name, sql in queries]


def table_rows(con: Any) -> dict[str, tuple[int, int]]:
    """{table: (rows, rows per page)} of the connection's database."""
    db = con._get_engine().db
    out = {}
    for name in con.tables():
        r = db.table(name)
        out[name] = (r.num_rows, r.rows_per_page)
    return out


def scale(queries: list[QueryRef], rows: dict[str, tuple[int, int]], factors: dict[str, float]
          ) -> list[QueryRef]:
    """``queries`` with each table's rows times ``factors[table]`` (default 1): see the module
    docstring. ``rows``: {table: (rows, rows per page)} of the traced database. Dictionaries keep
    their size (their number of distinct values barely grows with the scale factor)."""
    out = []
    for q in queries:
        scans = []
        for s in q.scans:
            f = factors.get(s.table, 1.0)
            n, per_page = rows[s.table]
            if f == 1.0 or not s.row_groups:
                scans.append(s)
                continue
            total = max(1, round(n * f))
            count = math.ceil(total / per_page)
            src_rows = [max(1, min(per_page, n - i * per_page)) for i in range(len(s.row_groups))]
            new = []
            for j in range(count):
                i = j % len(s.row_groups)
                r = min(per_page, total - j * per_page)
                ratio = r / src_rows[i]
                new.append([PageRef(replace(p.key, row_group=j), max(1, round(p.held * ratio)),
                                    max(1, round(p.link * ratio))) for p in s.row_groups[i]])
            scans.append(ScanRef(s.table, new, list(s.dictionaries)))
        out.append(QueryRef(q.name, scans))
    return out


def ssb_factors(sf_from: float, sf_to: float) -> dict[str, float]:
    """Row growth of the SSB tables between two scale factors (lineorder, customer and supplier
    grow linearly, part with 1 + log2(SF), date not at all)."""
    def part(sf: float) -> float:
        return 200_000 * (1 + math.log2(sf)) if sf >= 1 else 200_000 * sf

    lin = sf_to / sf_from
    return {"lineorder": lin, "customer": lin, "supplier": lin, "part": part(sf_to) / part(sf_from),
            "date": 1.0}


def data_bytes(con: Any, rows: dict[str, tuple[int, int]] | None = None,
               factors: dict[str, float] | None = None) -> int:
    """Bytes of the database's pages on disk (what ``du`` of it is close to), scaled by ``factors``."""
    db = con._get_engine().db
    factors = factors or {}
    return int(sum(db.table(name).bytes_on_disk() * factors.get(name, 1.0) for name in con.tables()))
