"""Dense fused kernels with the feature fused_probe_forms (membership bitmaps and 1-2 byte payload
codes per key, the rest of the columns loaded at once after a selective probe, streaming loads) on
the GPU: every SSB query and two dictionary-string filters (code lookups as bitmaps) equal to DuckDB, each run twice (the second from the kept state
over the device-resident pages, compressed or not), nothing left on the device; and the probes as
before it (experiment fused_probe_rows, its A/B)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from diff_data import build_ssb, dataset  # noqa: E402
from diff_queries import SSB_ORDERING, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

SF = 0.01
ROWS_PER_PAGE = 1 << 13
FUSED = "fused into one generated kernel"
LOOKUPS = [
    "select d_year, s_nation, count(*) as n, sum(lo_revenue) as r, min(lo_discount) as mi "
    "from lineorder, supplier, date where lo_suppkey = s_suppkey and lo_orderdate = d_datekey "
    "and (s_nation like 'UNITED%' or s_nation = 'CHINA') group by d_year, s_nation",
    "select lo_discount, lo_shipmode, count(*) as n, sum(lo_extendedprice) as e from lineorder "
    "where lo_shipmode in ('AIR', 'RAIL') and lo_quantity < 20 group by lo_discount, lo_shipmode",
]


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-probe-forms-ssb"), f"ssb-{SF}-{ROWS_PER_PAGE}",
                   lambda p: build_ssb(p, SF, ROWS_PER_PAGE))


@pytest.mark.parametrize("compressed,rows", [("auto", False), (True, False), (False, False), ("auto", True)],
                         ids=["auto", "compressed-pages", "decoded-pages", "rows-as-before"])
def test_probe_forms_answer_as_duckdb(ssb_db, monkeypatch, compressed, rows) -> None:
    """Every query with the default cache (pages compressed, the hottest columns kept decoded: the
    kernel variants for plain and random-access pages), q2.1 and q4.1 with every page compressed or
    none (then with the experiments fused_prefetch and fused_probe_bitmaps_first, every code array
    behind its bitmap), and as before the feature (fused_probe_rows)."""
    from hetdb.backend.gpu.codegen import runtime
    from hetdb.exec import compiled_features, fusion_forms

    monkeypatch.setattr(runtime, "_PIPELINES", {})  # (the kernels this test makes)
    if rows:
        monkeypatch.setattr(compiled_features, "enabled", compiled_features.enabled | {"fused_probe_rows"})
    if compressed is False:  # (the experiments: prefetch, codes behind the bitmaps however small)
        monkeypatch.setattr(compiled_features, "enabled",
                            compiled_features.enabled | {"fused_prefetch", "fused_probe_bitmaps_first"})
        monkeypatch.setattr(fusion_forms, "PREFILTER_BYTES", 0)
    queries = load_queries("ssb")
    compared = 0
    with hetdb.connect(ssb_db.path, device="gpu", gpu_compressed_cache=compressed) as con:
        todo = [*queries.items(), *((f"lookup{i}", s) for i, s in enumerate(LOOKUPS))]
        if compressed != "auto" or rows:
            todo = [(n, s) for n, s in todo if n in ("q2.1", "q4.1")]
        for name, sql in todo:
            want = ssb_db.reference(sql)
            sql = f"/* {compressed} {rows} */ {sql}"  # (a plan and fused state of its own)
            for _ in range(2):
                got = con.sql(sql)
                diff = mismatch(got.arrow(), want, SSB_ORDERING.get(name))
                assert diff is None, f"{name}: {diff}"
                assert got.stats["gpu_leaked_bytes"] == 0
            text = con.explain(sql, analyze=True)
            assert FUSED in next(line for line in text.splitlines() if "HashAggregate" in line), f"{name}:\n{text}"
            compared += 1
        assert con._get_engine().device.memory.used == 0
    assert len(queries) == 13 and compared == (15 if compressed == "auto" and not rows else 2)
    made = [fp.spec for fp in runtime._PIPELINES.values()]
    forms = {p.form for s in made for p in s.probes}
    if rows:
        assert forms == {"rows"} and not any(s.batch_after >= 0 or s.prefetch for s in made)
        return
    assert {"bits", "code8"} <= forms and (compressed is not False or "bits_code8" in forms)
    assert any(s.batch_after >= 0 and s.stream_loads for s in made)
    assert any(s.prefetch for s in made) == (compressed is False)
