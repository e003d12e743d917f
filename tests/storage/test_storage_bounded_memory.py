"""Ingest streams: peak memory does not grow with the size of the input file."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_INGEST = textwrap.dedent("""
    import resource, sys
    from hetdb.storage import Database
    from hetdb.storage.ingest import import_files
    db = Database.open(sys.argv[1], create=True)
    r = import_files(db, "t", [sys.argv[2]], rows_per_page=1 << 16)
    print(r.num_rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""")


def _write_csv(path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(7)
    step = 1_000_000
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("name", pa.string())])
    with pacsv.CSVWriter(str(path), schema) as w:
        for start in range(0, rows, step):
            n = min(step, rows - start)
            names = pc.binary_join_element_wise("name-", pa.array(rng.integers(0, 1 << 40, n)).cast(pa.string()), "")
            w.write_table(pa.table({"id": np.arange(start, start + n), "x": rng.random(n), "name": names},
                                   schema=schema))


def _peak_kib(tmp_path, tag: str, rows: int) -> int:
    csv = tmp_path / f"{tag}.csv"
    _write_csv(csv, rows)
    out = subprocess.run([sys.executable, "-c", _INGEST, str(tmp_path / f"db-{tag}"), str(csv)],
                         capture_output=True, text=True, timeout=600, check=True)
    n, peak = map(int, out.stdout.split())
    assert n == rows
    return peak


@pytest.mark.slow
def test_csv_ingest_memory_does_not_grow_with_file_size(tmp_path):
    # Past a few million rows the import's working set (readahead blocks, one page per column being
    # built, Arrow's pool) is reached; tripling the file must then add next to nothing.
    small = _peak_kib(tmp_path, "small", 6_000_000)    # ~250 MB of CSV
    large = _peak_kib(tmp_path, "large", 18_000_000)   # ~750 MB of CSV
    # A reader that held the file, or its decoded columns, would need ~500 MB more for the large one.
    assert large - small < 96 * 1024, (small, large)
