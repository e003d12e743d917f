"""Reading byte ranges of table files into (optionally caller-supplied, e.g. pinned) buffers.

io/ knows nothing about page contents: it moves bytes. ``read_range`` reads one range with O_DIRECT
where the file system allows it (``read_verified``: into a page's runs, CRC checked); ``read_pages``
reads many ranges concurrently on a thread pool; ``read_span`` reads pages lying back to back in a
file as one request (``adjacent_spans`` finds them), each page's CRC checked on its own.
"""

from __future__ import annotations

from hetdb.io.direct import ALIGN, aligned_empty, read_into, read_range, read_verified, will_need
from hetdb.io.pool import PageRange, read_pages, submit_pages
from hetdb.io.spans import SpanPage, adjacent_spans, read_span, read_span_bytes, verify_span

__all__ = ["ALIGN", "aligned_empty", "read_into", "read_range", "read_verified", "read_pages", "PageRange",
           "submit_pages", "SpanPage", "adjacent_spans", "read_span", "read_span_bytes",
           "verify_span", "will_need"]
