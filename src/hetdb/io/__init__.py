"""Reading byte ranges of table files into (optionally caller-supplied, e.g. pinned) buffers.

io/ knows nothing about page contents: it moves bytes. ``read_range`` reads one range with O_DIRECT
where the file system allows it (``read_verified``: into a page's runs, CRC checked); ``read_pages`` reads many ranges concurrently on a thread pool.
"""

from __future__ import annotations

from hetdb.io.direct import ALIGN, aligned_empty, read_range, read_verified
from hetdb.io.pool import PageRange, read_pages, submit_pages

__all__ = ["ALIGN", "aligned_empty", "read_range", "read_verified", "read_pages", "PageRange", "submit_pages"]
