"""The SQL corpus (``tests/sql/corpus/*.test``) on every executor configuration: each query's answer
equals DuckDB's on the same rows (or the literal rows in the file), and each error case raises the
named error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from corpus_data import build  # noqa: E402
from corpus_runner import CORPUS_DIR, parse, run_case  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

FILES = sorted(p.name for p in CORPUS_DIR.glob("*.test"))
CONFIGS = {
    "cpu": {},
    "cpu-batch7": {"batch_rows": 7},
    "cpu-1thread-batch1000": {"threads": 1, "batch_rows": 1000},
    "cpu-256KB-batch50": {"host_memory_limit": "256KB", "batch_rows": 50},
    "gpu": {"device": "gpu"},
    "gpu-tiny": {"device": "gpu", "gpu_memory_limit": "1MB"},
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sql-corpus") / "db")
    duck = build(path)
    return path, duck


def _params():
    for f in FILES:
        for name in CONFIGS:
            marks = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU")] \
                if name.startswith("gpu") else []
            yield pytest.param(f, name, marks=marks, id=f"{f}-{name}")


@pytest.mark.parametrize("file,config", list(_params()))
def test_corpus(corpus, file, config) -> None:
    path, duck = corpus
    options = dict(CONFIGS[config])
    device = options.pop("device", "cpu")
    cases = parse(CORPUS_DIR / file)
    assert cases, f"{file} holds no cases"
    failures = []
    with hetdb.connect(path, device=device, **options) as con:
        for case in cases:
            problem = run_case(case, con, duck)
            if problem is not None:
                failures.append(problem)
    assert not failures, f"{len(failures)} of {len(cases)} cases of {file} failed:\n" + "\n".join(failures)
