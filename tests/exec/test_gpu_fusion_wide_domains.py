"""Group-key domains of fused pipelines, planned and driven on the CPU with emulated kernels
(fusion_emulation.py): a scanned key too wide for a dense domain is refused before any dense table
is made, a domain within twice the rows fuses densely, and build columns that depend on a grouped
probe key are looked up per group, not grouped."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))


import pyarrow as pa  # noqa: E402

import hetdb  # noqa: E402
from hetdb import types as T  # noqa: E402
from hetdb.backend.gpu.codegen import groups as G  # noqa: E402
from hetdb.storage import ColumnSpec, Database  # noqa: E402


def test_a_wide_scanned_group_key_is_refused_before_any_dense_table(tmp_path, emulated_fusion, monkeypatch):
    """TPC-H q11's shape: a join, grouped by a scanned key whose zone-map domain exceeds the fused
    limit. The refusal comes before the join's dense table is built (no device work per run for a
    pipeline that then runs compiled), with the reason the full check gives; answers unchanged."""

    import hetdb.backend.gpu.codegen as codegen

    wide = G.MAX_FUSED_GROUPS * 4
    db = Database.open(str(tmp_path / "db"), create=True)
    rng = np.random.default_rng(5)
    keys = rng.integers(0, wide, 6000)
    keys[:2] = [0, wide - 1]  # the zone maps span the whole range
    fact = pa.table({"k": pa.array(keys, pa.int64()), "d": pa.array(rng.integers(0, 50, 6000), pa.int32()),
                     "v": pa.array(rng.integers(0, 9, 6000), pa.int64())})
    dim = pa.table({"d": pa.array(np.arange(50), pa.int32()), "keep": pa.array(np.arange(50) % 2, pa.int32())})
    for name, tab in (("f", fact), ("dm", dim)):
        specs = [ColumnSpec(c, T.INT64 if tab[c].type == pa.int64() else T.INT32) for c in tab.column_names]
        with db.create_table(name, specs, rows_per_page=1000) as w:
            w.append_arrow(tab)
    built = []
    real_build = codegen.dense_build
    monkeypatch.setattr(codegen, "dense_build", lambda *a, **k: built.append(1) or real_build(*a, **k))
    sql = "select k, sum(v) as s from f, dm where f.d = dm.d and dm.keep = 1 group by k"
    with hetdb.connect(str(tmp_path / "db"), device="cpu", cpu_compile=False) as con:
        text = con.explain(sql, analyze=True)
        got = con.sql(sql).arrow()
    agg = next(line for line in text.splitlines() if "HashAggregate" in line)
    assert "exceeds the fused limit" in agg, text
    assert built == []
    expect: dict[int, int] = {}
    for k, d, v in zip(keys.tolist(), fact["d"].to_pylist(), fact["v"].to_pylist()):
        if d % 2 == 1:
            expect[k] = expect.get(k, 0) + v
    assert dict(zip(got["k"].to_pylist(), got["s"].to_pylist())) == expect and len(expect) > 1000


def test_a_wide_key_domain_within_twice_the_rows_fuses_densely(tmp_path, emulated_fusion, monkeypatch):
    """TPC-H q18's shape (group lineitem by l_orderkey): a scanned key whose zone-map domain is past
    the small dense limit but at most DENSE_ROWS_FACTOR slots per scanned row aggregates densely
    (accumulators reserved against the device budget, released after the kernel); a domain past
    that stays refused. Answers match a plain-Python sum either way."""


    monkeypatch.setattr(G, "MAX_FUSED_GROUPS", 1000)
    rows = 6000
    rng = np.random.default_rng(11)
    db = Database.open(str(tmp_path / "db"), create=True)
    tables = {}
    for name, span in (("narrow", 9000), ("wide", 40000)):  # 1.5 and 6.7 slots per row
        keys = np.sort(rng.integers(0, span, rows))
        keys[[0, -1]] = [0, span - 1]
        tab = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(rng.integers(-9, 9, rows), pa.int64())})
        tables[name] = tab
        with db.create_table(name, [ColumnSpec("k", T.INT64), ColumnSpec("v", T.INT64)], rows_per_page=1000) as w:
            w.append_arrow(tab)
    with hetdb.connect(str(tmp_path / "db"), device="cpu", cpu_compile=False) as con:
        for name, fused in (("narrow", True), ("wide", False)):
            sql = f"select k, sum(v) as s, count(*) as n from {name} group by k"
            text = con.explain(sql, analyze=True)
            res = con.sql(sql)
            got = res.arrow()
            agg = next(line for line in text.splitlines() if "HashAggregate" in line)
            if fused:
                assert "fused into one generated kernel" in agg and "9000 dense groups" in text, text
            else:
                assert "exceeds the fused limit" in agg, text
            tab = tables[name]
            expect: dict[int, list[int]] = {}
            for k, v in zip(tab["k"].to_pylist(), tab["v"].to_pylist()):
                e = expect.setdefault(k, [0, 0])
                e[0] += v
                e[1] += 1
            assert {k: [s, n] for k, s, n in zip(got["k"].to_pylist(), got["s"].to_pylist(),
                                                got["n"].to_pylist())} == expect
            assert len(expect) > 1000
            assert con._get_engine().memory.used == 0
        from hetdb.exec import compiled_features

        monkeypatch.setattr(compiled_features, "disabled", {"wide_dense_groups"})
        text = con.explain("select k, sum(v) as s from narrow group by k", analyze=True)
        assert "exceeds the fused limit of 1000" in text, text


def test_group_keys_of_the_joined_row_are_looked_up_not_grouped(tmp_path, emulated_fusion, monkeypatch):
    """TPC-H q03's shape: GROUP BY l_orderkey, o_orderdate, o_shippriority over lineitem joined with
    orders on l_orderkey. The orders columns are functions of the probe key (the build key is unique),
    so the kernel groups by l_orderkey alone (a domain the size of its range, not the product) and
    each group's date and priority (a dictionary string, a NULL too) come from its build row; with the
    switch dependent_keys off the product domain is grouped. Answers equal either way."""

    from hetdb.exec import compiled_features

    rng = np.random.default_rng(3)
    db = Database.open(str(tmp_path / "db"), create=True)
    okeys = np.arange(1, 400, dtype=np.int64) * 4  # sparse keys, like TPC-H's
    odate = rng.integers(9000, 9400, okeys.shape[0]).astype(np.int32)
    prio = [None if i % 37 == 0 else f"{rng.integers(1, 6)}-P" for i in range(okeys.shape[0])]
    lk = np.sort(rng.choice(okeys, 5000))
    tabs = {"o": pa.table({"ok": pa.array(okeys), "od": pa.array(odate, pa.int32()),
                           "op": pa.array(prio, pa.string())}),
            "l": pa.table({"lk": pa.array(lk), "v": pa.array(rng.integers(1, 100, lk.shape[0]), pa.int64())})}
    types = {pa.int64(): T.INT64, pa.int32(): T.INT32, pa.string(): T.STRING}
    for name, tab in tabs.items():
        with db.create_table(name, [ColumnSpec(c, types[tab[c].type]) for c in tab.column_names],
                             rows_per_page=1000) as w:
            w.append_arrow(tab)
    sql = "select lk, od, op, sum(v) as s, count(*) as n from l, o where lk = ok and od < 9300 group by lk, od, op"
    expect: dict[tuple, list[int]] = {}
    row_of = {int(k): i for i, k in enumerate(okeys)}
    for k, v in zip(lk.tolist(), tabs["l"]["v"].to_pylist()):
        i = row_of[k]
        if odate[i] < 9300:
            e = expect.setdefault((k, int(odate[i]), prio[i]), [0, 0])
            e[0] += v
            e[1] += 1
    for switched_off in (False, True):
        monkeypatch.setattr(compiled_features, "disabled", {"dependent_keys"} if switched_off else set())
        with hetdb.connect(str(tmp_path / "db"), device="cpu", cpu_compile=False) as con:
            text = con.explain(sql, analyze=True)
            got = con.sql(sql).arrow()
        agg = next(line for line in text.splitlines() if "HashAggregate" in line)
        if switched_off:  # (grouped by, the priority's NULLs keep the pipeline from the dense kernel)
            assert "fused" not in agg and "build column op" in agg and "has NULLs" in agg, text
        else:  # the domain of l_orderkey alone: from the smallest to the largest key the scan holds
            assert "fused into one generated kernel" in agg, text
            assert f"({int(lk.max() - lk.min() + 1)} dense groups)" in agg, agg
        rows = zip(got["lk"].to_pylist(), got["od"].to_pylist(), got["op"].to_pylist(),
                   got["s"].to_pylist(), got["n"].to_pylist())
        assert {(k, d, p): [s, n] for k, d, p, s, n in rows} == expect and len(expect) > 100
