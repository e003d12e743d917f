"""The raw-allocator hook that asks for huge pages for Numba's large arrays (backend/cpu/hugepages):
installed in a fresh process, Numba and NumPy allocations of every size (and blocks allocated before
it, freed after) work, and a query gives DuckDB's answer; HETDB_HUGEPAGES=1 installs it when the
CPU backend is imported, and without it the allocator is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetdb.backend.cpu import hugepages

_SRC = str(Path(hugepages.__file__).parents[3])

_SCRIPT = r"""
import numpy as np
from numba import njit, prange
import duckdb, hetdb
from hetdb.backend.cpu import hugepages

@njit(parallel=True)
def fill(n):
    a = np.empty(n, np.int64)
    for i in prange(n):
        a[i] = i
    return a

before = [fill(1 << k) for k in (4, 16, 23)]
assert hugepages.install() and hugepages.install()
after = [fill(1 << k) for k in (0, 10, 19, 20, 22, 23, 24)]
for a in before + after:
    assert int(a[-1]) == a.shape[0] - 1 and int(a.sum()) == a.shape[0] * (a.shape[0] - 1) // 2
del before, after
grown = np.zeros(3, np.int64)
for k in range(20):
    grown = np.resize(grown, grown.shape[0] * 2)
con = hetdb.connect(":memory:", device="cpu", threads=2)
con.sql("create table t as select range as x, range % 7 as g from range(3000000)")
got = sorted(con.sql("select g, sum(x), count(*) from t group by g").arrow().to_pylist(), key=lambda r: r["g"])
want = duckdb.sql("select range % 7 as g, sum(range)::BIGINT, count(*) from range(3000000) group by 1 order by 1").fetchall()
assert [tuple(r.values()) for r in got] == [tuple(int(v) for v in r) for r in want], (got, want)
print("hugepages ok")
"""


def _run(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCRIPT], env={**os.environ, "PYTHONPATH": _SRC, **env},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not hugepages.wanted(), reason="transparent huge pages are not 'madvise' here")
def test_hook_allocates_frees_and_queries_agree() -> None:
    done = _run({})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hugepages ok" in done.stdout


@pytest.mark.skipif(not hugepages.wanted(), reason="transparent huge pages are not 'madvise' here")
def test_installed_only_when_asked() -> None:
    probe = "import hetdb.backend.cpu; from hetdb.backend.cpu import hugepages; print(hugepages.installed())"
    for value, expect in (("1", "True"), ("0", "False")):
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": _SRC, hugepages.ENV: value})
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == expect
