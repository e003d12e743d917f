"""What a streamed delivery's pages ask the device cache for: admission page by page, or a row group's
missing pages together (``admit_row_groups``, used by backend/gpu/stream_batch.py).

A row group the cache holds whole runs in the launch over cached pages (exec/resident_split.py); pages
admitted one by one as room came and went left most row groups part cached (H100 s16, SSB SF 20 q3.1
hot at 10%: each of 13 deliveries copied 6-38 MB of ~90 MB). So a paged delivery asks for all of a row
group's missing pages or none, judged as one by its first page's history, and the row group gets in
only when worth ADMIT_MARGIN times what it displaces: row groups of a scan larger than the cache are
worth alike, and swapping them run after run copies both again (a working set no longer read ages:
the next query's row groups still get in at its second run).
"""

from __future__ import annotations

from typing import Any

# A paged delivery asks for a row group's missing pages together (all or none). False: page by page (A/B).
ALIGNED_ADMISSION = True
ADMIT_MARGIN = 1.5


def admit_row_groups(cache: Any, row_groups: list[Any], paged: bool, first_reuse: Any, headroom: int) -> None:
    """Set ``admitted`` on every page of ``row_groups`` (each with ``pages``) the cache does not hold,
    from ``cache.reserve``'s verdicts, asked in page order (one access clock for the group)."""
    h2d = getattr(getattr(cache, "rates", None), "h2d", None)
    for rg in row_groups:
        missing = [p for p in rg.pages if not p.cached]
        if ALIGNED_ADMISSION and paged and len(missing) > 1 and all(p.device_bytes is not None for p in missing):
            # what re-fetching them saves: the bytes, and one link round trip per page beyond the
            # first (in bytes at the link's rate); worth ADMIT_MARGIN times what it displaces
            trips = 0 if h2d is None else int((len(missing) - 1) * h2d.latency_s * h2d.bytes_per_s)
            ok = cache.reserve(sum(p.device_bytes for p in missing), key=missing[0].key,
                               link_bytes=int((sum(p.location.length for p in missing) + trips) / ADMIT_MARGIN),
                               first_reuse=first_reuse, headroom=headroom)
            for p in missing:
                p.admitted = ok
            continue
        for p in missing:
            p.admitted = cache.reserve(p.device_bytes, key=p.key, link_bytes=p.location.length,
                                       first_reuse=first_reuse, headroom=headroom)
