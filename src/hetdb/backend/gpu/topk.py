"""Top-k on the device: the k first rows in the order of a sort's key images, without sorting them all.

``topk_order`` takes the order-preserving int64 images of the sort keys (hashing.sort_keys: descending
keys already reversed, NULL flags as keys of their own) and returns the row numbers of the k first
rows in the order a full lexicographic sort would give them, ties broken by row number (as
``GpuBackend.sort_indices``). Instead of a multi-key comparison sort of every row it radix-sorts the
first key's image alone (CUB), reads the k-th smallest on the device as a threshold, keeps the rows
whose first key is at most it (every row of the top k is one of them; rows tied at the threshold are
all kept, so the result is exact) and sorts only those by every key. The one host read is the number
of rows kept (the compaction). Written over ``xp`` so it runs the same on NumPy (tests).
"""

from __future__ import annotations

from typing import Any

# below this many rows (or when k is a large part of them) one full sort is as quick
FULL_SORT_ROWS = 1 << 14


def lexsort_rows(xp: Any, images: list[Any], rows: Any) -> Any:
    """Positions of ``rows`` ordered by ``images`` (first key first), then by the row number."""
    return xp.lexsort(xp.stack([rows, *reversed(images)]))


def topk_order(xp: Any, images: list[Any], k: int) -> Any:
    """Row numbers (int64) of the first ``k`` rows by ``images``; fewer when there are fewer rows."""
    n = int(images[0].shape[0])
    k = max(0, min(k, n))
    if k == 0:
        return xp.zeros(0, dtype=xp.int64)
    rows = xp.arange(n, dtype=xp.int64)
    if n <= FULL_SORT_ROWS or 4 * k >= n:
        return lexsort_rows(xp, images, rows)[:k].astype(xp.int64, copy=False)
    first = images[0]
    threshold = xp.sort(first)[k - 1:k]  # stays on the device
    kept = xp.nonzero(first <= threshold)[0].astype(xp.int64, copy=False)
    order = lexsort_rows(xp, [im[kept] for im in images], kept)
    return kept[order[:k]]
