"""The window corpus (``corpus/window.test``) on the array-module window kernels: the algorithm the GPU
runs with CuPy (``exec/window_array``, its per-partition sort of grouped rows by NumPy), here with
NumPy in place of the CPU's compiled loops, against DuckDB; also under a tiny memory limit (spilled window partitions) and with tiny batches."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from corpus_data import build  # noqa: E402
from corpus_runner import CORPUS_DIR, parse, run_case  # noqa: E402

import hetdb  # noqa: E402
from hetdb.exec.operators import window  # noqa: E402
from hetdb.exec.window_array import ArrayKernels  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("window-array") / "db")
    return path, build(path)


@pytest.mark.parametrize("options", [{}, {"host_memory_limit": "256KB", "batch_rows": 50}], ids=["plain", "256KB"])
def test_window_corpus_on_the_array_kernels(corpus, options, monkeypatch) -> None:
    path, duck = corpus
    used, segments = [], []

    def segment_sort(code, heads, n):  # the GPU kernel's contract (backend/gpu/window) on NumPy
        segments.append(n)
        seg = np.zeros(n, np.int64)
        seg[heads[1:]] = 1
        return np.lexsort([code, np.cumsum(seg)])

    monkeypatch.setattr(window, "host_kernels", lambda: used.append(1) or ArrayKernels(np, segment_sort, 64))
    cases = parse(CORPUS_DIR / "window.test")
    assert len(cases) >= 30
    with hetdb.connect(path, device="cpu", **options) as con:
        failures = [p for p in (run_case(c, con, duck) for c in cases) if p is not None]
    assert not failures, f"{len(failures)} of {len(cases)} window cases failed:\n" + "\n".join(failures)
    assert used, "the array kernels never ran"
    assert segments, "no window sorted its grouped partitions one by one"
