"""KP.ntile_runs (NTILE straight from the partition-start flags) equals DuckDB's NTILE rule computed
row by row in Python, on random partitions, empty and one-row inputs and sizes past one chunk."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import window_passes as KP


def _reference(flags: np.ndarray, buckets: int) -> list[int]:
    out, n = [], flags.shape[0]
    starts = [i for i in range(n) if flags[i]] + [n]
    for s, e in zip(starts, starts[1:]):
        total = e - s
        t = min(buckets, total)
        tile, large = total // t, total % t
        for r in range(total):
            out.append(1 + r // (tile + 1) if r < large * (tile + 1) else 1 + large + (r - large * (tile + 1)) // tile)
    return out


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 200_003])
@pytest.mark.parametrize("share", [0.0, 0.002, 0.4, 1.0])
def test_ntile_runs_matches_the_rule(n, share) -> None:
    rng = np.random.default_rng(n + int(share * 1000))
    flags = rng.random(n) < share
    if n:
        flags[0] = True
    for buckets in (1, 4, 9, 1000):
        got = KP.ntile_runs(flags, buckets)
        assert got.shape[0] == n
        assert got.tolist() == _reference(flags, buckets)
