"""Compiled GPU pipelines as one launch over every cached page (exec/compiled_paged.py, issue 10)
whether the device cache keeps pages compressed (option ``gpu_compressed_cache``: the page table
flags each page's encoded data section and the kernel decodes the slice it reads) or decoded, against
DuckDB, on the NULL tables of the differential suites (12 row groups of 256 rows: NULLs in every
nullable column, whole pages NULL, ascending ids, plain-string pages read by LIKE and gathered for
a sort, string join keys of dictionary and plain pages) and on TPC-H q09 (its aggregation over partsupp after three probes) and
q12 (its filtered lineitem build).
Each query runs cold, then hot (where the paged launch runs); EXPLAIN ANALYZE of the hot run must
name the paged launch, and with compressed pages it must have read some of them in place."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import TOTAL, mismatch  # noqa: E402
from diff_data import build_nulls, build_tpch, dataset  # noqa: E402
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

PAGED = "one launch over every cached page"
# queries whose kernel reads pages the writer compresses (ascending ids, small integers): read in place
IN_PLACE_QUERIES = ("computed_key_ids", "sort_gathers_strings")
INSTEAD = "with pages it cannot take: compiled hash aggregation, one launch over every cached page"
IN_PLACE = "column pages read compressed in place"

# name -> (sql, ordered): each is a pipeline the dense fused path refuses (a LIKE on a plain string, a
# float or computed group key, a string join key, a row sink), so it runs compiled
QUERIES = {
    # (s_hi: its first page is dictionary-encoded, the later ones plain: the kernel reads them all plain)
    "like_plain_string": ("SELECT f64, count(*), sum(i64), min(d), max(dec) FROM nulls "
                          "WHERE s_hi LIKE 'v1%' OR s_hi LIKE '%é' GROUP BY f64", False),
    "probe_float_key": ("SELECT n.f64, count(*), sum(m.v), max(n.ts) FROM nulls n JOIN nulls2 m ON n.k = m.k "
                        "GROUP BY n.f64", False),
    "computed_key_ids": ("SELECT id % 11 AS r, count(*), sum(id), min(i64), max(dec), sum(i_nn) FROM nulls "
                         "WHERE id > 17 GROUP BY r", False),
    # string join keys (dictionaries of two tables: the kernel looks up the build's id of each code, the
    # ids mapped on the device, backend/gpu/string_keys.py; _run refuses any CPU step)
    "string_key_join": ("SELECT n.i32, count(*), sum(m.v), min(m.d) FROM nulls n JOIN nulls2 m ON n.s = m.s "
                        "GROUP BY n.i32", False),
    "string_key_semi": ("SELECT i_nn, count(*), sum(i64) FROM nulls WHERE s IN (SELECT s FROM nulls2 WHERE v > 0) "
                        "GROUP BY i_nn", False),
    "string_key_left_rows": ("SELECT n.id, n.s, m.v FROM nulls n LEFT JOIN (SELECT s, max(v) AS v FROM nulls2 "
                             "GROUP BY s) m ON n.s = m.s WHERE n.i32 > 20 ORDER BY n.id", True),
    # a plain-string join key (s_hi: plain after its first page): the kernel hashes each row's string
    # and looks it up in the build encoder's table of strings on the device
    "string_key_plain": ("SELECT a.i_nn, count(*), sum(b.c), min(a.id) FROM nulls a JOIN (SELECT s_hi, count(*) AS c "
                         "FROM nulls WHERE i32 > 40 GROUP BY s_hi) b ON a.s_hi = b.s_hi GROUP BY a.i_nn", False),
    # the dense fused kernel's pipeline (dense group key), whose pages have NULLs: the compiled kernel
    # takes all of them in one launch instead (compiled_paged.compiled_over_pages)
    "fused_plan_null_pages": ("SELECT i_nn, count(*), sum(i64), min(d), max(i32) FROM nulls WHERE i32 > -20 "
                              "GROUP BY i_nn", False),
    "sort_gathers_strings": ("SELECT id, s_hi, s, i64, dec, b FROM nulls WHERE i32 > 10 ORDER BY id", True),
    "topn": ("SELECT id, d, s_hi, f64 FROM nulls WHERE d > DATE '1995-01-01' "
             "ORDER BY i64 DESC NULLS LAST, id LIMIT 25", True),
}


@pytest.fixture(scope="module")
def nulls_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-paged-nulls"), "nulls", build_nulls)


@pytest.fixture(scope="module")
def tpch_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-paged-tpch"), "tpch-0.01", lambda p: build_tpch(p, 0.01, 4096))


def _run(con, sql: str, reference, ordering, tol: float = 1e-9) -> str:
    """The query cold and hot, each compared with ``reference``; EXPLAIN ANALYZE of a hot run."""
    for _ in range(2):
        res = con.sql(sql)
        assert res.num_rows > 0, sql
        diff = mismatch(res.arrow(), reference, ordering, tol)
        assert diff is None, (sql, diff)
        assert res.stats["gpu_leaked_bytes"] == 0 and not res.stats["cpu_fallbacks"], (sql, res.stats)
    return con.explain(sql, analyze=True)


@pytest.mark.parametrize("query", ["q09", "q12"])
def test_tpch_paged_with_and_without_compressed_pages(tpch_db, query) -> None:
    sql = load_queries("tpch")[query]
    ref = tpch_db.reference(sql)
    texts = {}
    for compressed in (True, False):
        with hetdb.connect(tpch_db.path, device="gpu", gpu_compressed_cache=compressed) as con:
            texts[compressed] = _run(con, sql, ref, TPCH_ORDERING[query], TPCH_TOLERANCE.get(query, 1e-9))
        assert PAGED in texts[compressed], (query, compressed, texts[compressed])
    assert IN_PLACE in texts[True] and IN_PLACE not in texts[False], texts


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("name", list(QUERIES))
def test_paged_pipelines_over_compressed_or_decoded_pages(nulls_db, name, compressed) -> None:
    sql, ordered = QUERIES[name]
    with hetdb.connect(nulls_db.path, device="gpu", gpu_compressed_cache=compressed) as con:
        text = _run(con, sql, nulls_db.reference(sql), TOTAL if ordered else None)
    assert PAGED in text, (name, compressed, text)
    assert (INSTEAD in text) == name.startswith("fused_plan"), (name, compressed, text)
    assert (IN_PLACE in text) == compressed or (compressed and name not in IN_PLACE_QUERIES), (name, text)
