"""Dense join tables, compacted group keys and probe forms of fused pipelines planned on the host
(exec/fusion_host.py HOST_PLAN_ROWS: one copy of a dimension's key and group columns out, one upload of
what the kernel reads), planned and driven on the CPU with emulated kernels (fusion_emulation.py):
every SSB query answers as DuckDB does, through the host path, with the same tables, forms and
domains as the array-module path makes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from diff_queries import SSB_ORDERING, load_queries  # noqa: E402

import hetdb  # noqa: E402


def _plans(monkeypatch, fusion, pending: list) -> list:
    """The fused plans made (and, in ``pending``, per plan whether its tables' rows and payload were
    still on the host when the plan was done: the kernel of a narrow-form probe does not read them,
    the emulated one does)."""
    got: list = []
    real = fusion._plan_checked

    def plan(*a):
        got.append(real(*a))
        pending.append([t.pending is not None for t in got[-1].tables])
        return got[-1]

    monkeypatch.setattr(fusion, "_plan_checked", plan)
    return got


def _shape(plan) -> list:
    out: list = [plan.pipeline.real.spec if hasattr(plan.pipeline, "real") else plan.pipeline.spec]
    for t in plan.tables:
        out.append((t.lo, t.size, t.num_rows, t.payload_columns,
                    {f: np.asarray(a).tolist() for f, a in sorted(t.forms.items())}))
    for k in plan.group_keys:
        out.append((k.domain.lo, k.domain.hi, None if k.domain.values is None else np.asarray(k.domain.values).tolist()))
    return out


def test_ssb_plans_on_the_host_as_on_the_device(ssb_db, emulated_fusion, monkeypatch):
    from hetdb.backend.gpu.codegen import dense_tables
    from hetdb.exec import fusion, fusion_host

    pending: list = []
    planned = _plans(monkeypatch, fusion, pending)
    host = []
    real_host = dense_tables.host_planned
    monkeypatch.setattr(dense_tables, "host_planned", lambda *a, **k: host.append(1) or real_host(*a, **k))
    queries = load_queries("ssb")
    compared, default = 0, fusion_host.HOST_PLAN_ROWS
    for name, sql in queries.items():
        before = len(host)
        shapes = []
        for limit in (default, 0):
            monkeypatch.setattr(fusion_host, "HOST_PLAN_ROWS", limit)
            planned.clear()
            pending.clear()
            with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
                got = con.sql(sql).arrow()
            diff = mismatch(got, ssb_db.reference(sql), SSB_ORDERING[name])
            assert diff is None, f"{name} (HOST_PLAN_ROWS={limit}): {diff}"
            shapes.append([_shape(p) for p in planned if p is not None and not p.deferred])
            if limit:  # (every table planned on the host stays there through the planning)
                assert sum(map(sum, pending)) == len(host) - before, name
        assert shapes[0] == shapes[1], name
        compared += bool(shapes[0]) and len(host) > before  # (a dimension of it planned on the host)
    assert compared == len(queries) == 13


def test_host_products_of_every_join_go_up_with_one_upload(monkeypatch):
    """The probe forms and compacted key values the host planned for a pipeline's joins go to the
    device together (one upload), in place of the host arrays; device arrays stay as they are."""
    from types import SimpleNamespace

    from hetdb.backend.gpu.codegen import dense_tables
    from hetdb.backend.gpu.codegen.dense_tables import DenseJoinTable
    from hetdb.backend.gpu.codegen.groups import KeyDomain
    from hetdb.exec import fusion_host

    class Device(np.ndarray):  # (what the upload returns: not a host array)
        pass

    uploads = []
    monkeypatch.setattr(dense_tables, "_to_device",
                        lambda arrays: uploads.append(len(arrays)) or [a.copy().view(Device) for a in arrays])
    on_device = np.zeros(3, np.int8).view(Device)
    tables = [DenseJoinTable(None, 0, 3, forms={"code8": np.array([0, -1, 1], np.int8)}),
              DenseJoinTable(None, 0, 3, forms={"bits": np.array([5], np.uint32), "code8": on_device})]
    groups = {"a": ("a@rank", KeyDomain(0, 1, np.array([7, 9])), None),
              "b": ("b@rank", KeyDomain(0, 0, np.array([4]).view(Device)), None)}
    fusion_host.upload_host_products(SimpleNamespace(backend=SimpleNamespace(xp=object())), tables, groups)
    assert uploads == [3]
    assert all(type(a) is Device for t in tables for a in t.forms.values())
    assert tables[1].forms["code8"] is on_device
    assert tables[0].forms["code8"].tolist() == [0, -1, 1] and tables[1].forms["bits"].tolist() == [5]
    assert type(groups["a"][1].values) is Device and groups["a"][1].values.tolist() == [7, 9]
    assert groups["a"][1].hi == 1 and groups["b"][1].values.tolist() == [4]


def test_the_finish_decodes_with_what_the_host_has():
    """A group key whose values were planned on the host and whose dictionary a scan moved from the
    table version's host strings is decoded on the host without copying either back."""
    import pyarrow as pa

    from hetdb import types as T
    from hetdb.backend.gpu.codegen.groups import KeyDomain
    from hetdb.column import Column
    from hetdb.exec.fusion import GroupKey
    from hetdb.exec.fusion_run import _on_host

    class Device(np.ndarray):  # (a device array: reading it back would be a copy and a wait)
        def get(self):
            raise AssertionError("copied back")

    host = Column.from_arrow(pa.array(["ASIA", "EUROPE", "AMERICA"], pa.string()), T.STRING)
    moved = Column(T.STRING, offsets=np.asarray(host.offsets).view(Device), chars=np.asarray(host.chars).view(Device))
    moved.host_source = host
    values = np.array([0, 2], np.int32)
    key = GroupKey(KeyDomain(0, 1, values.view(Device)), T.STRING, moved, host_values=values)
    domain, dictionary = _on_host(key)
    assert dictionary is host and domain.values is values and (domain.lo, domain.hi) == (0, 1)
    assert _on_host(key) == (domain, dictionary)


def test_a_rows_probe_and_a_dependent_key_have_their_table_on_the_device_when_planned(ssb_db, emulated_fusion,
                                                                                     monkeypatch):
    """A probe that reads its build rows (a payload value summed) and a key looked up in a join's
    build rows put the host-planned table's rows on the device while planning (a kept plan's device
    accounting is made then); narrow-form probes leave theirs on the host."""
    from hetdb.exec import fusion
    from hetdb.exec.fusion import DependentKey

    pending: list = []
    planned = _plans(monkeypatch, fusion, pending)
    rows_probe = ("select c_nation, d_year, sum(lo_revenue + c_custkey) as r from lineorder, customer, date "
                  "where lo_custkey = c_custkey and lo_orderdate = d_datekey and c_region = 'ASIA' "
                  "group by c_nation, d_year")
    dependent = ("select lo_orderdate, d_year, sum(lo_revenue) as r from lineorder, date, supplier "
                 "where lo_orderdate = d_datekey and lo_suppkey = s_suppkey and s_region = 'ASIA' "
                 "and d_year = 1993 group by lo_orderdate, d_year")
    for sql in (rows_probe, dependent):
        planned.clear()
        pending.clear()
        with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
            got = con.sql(sql).arrow()
        assert mismatch(got, ssb_db.reference(sql), None) is None and got.num_rows > 0
        (plan,) = [p for p in planned if p is not None]
        looked_up = {s.table for s in plan.key_sources or () if isinstance(s, DependentKey)}
        on_device = [not t.forms or i in looked_up for i, t in enumerate(plan.tables)]
        assert pending == [[not d for d in on_device]], sql
        assert any(on_device) and not all(on_device), sql


def test_a_sparse_group_key_past_the_host_sort_is_compacted_by_the_device_path(ssb_db, emulated_fusion,
                                                                              monkeypatch):
    """Group-key values too sparse for the presence table and too many for a host sort
    (HOST_COMPACT_ROWS) leave the join to the device path; same answer."""
    from hetdb.backend.gpu.codegen import dense_tables, groups

    host = []
    real_host = dense_tables.host_planned
    monkeypatch.setattr(dense_tables, "host_planned", lambda *a, **k: host.append(1) or real_host(*a, **k))
    sql = ("select d_datekey, sum(lo_revenue) as r from lineorder, date where lo_orderdate = d_datekey "
           "group by d_datekey")
    for limit, planned_on_host in ((groups.HOST_COMPACT_ROWS, 1), (10, 0)):
        monkeypatch.setattr(groups, "HOST_COMPACT_ROWS", limit)
        host.clear()
        with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
            got = con.sql(sql).arrow()
        assert mismatch(got, ssb_db.reference(sql), None) is None and got.num_rows > 300
        assert len(host) == planned_on_host


def test_the_joins_columns_come_out_in_one_copy_aligned(monkeypatch):
    """``_copy_out``: device arrays of several dtypes (a bool mask between int32 ones) packed widest
    first into one pinned copy, each back with its values, dtype, shape and alignment; host arrays
    untouched."""
    from types import SimpleNamespace

    from hetdb.backend.gpu import memory
    from hetdb.exec import fusion_host

    copies = []

    class Device(np.ndarray):
        def get(self, out=None):
            copies.append(int(self.nbytes))
            out[...] = np.asarray(self)
            return out

    xp = SimpleNamespace(uint8=np.uint8, ascontiguousarray=lambda a: a,
                         concatenate=lambda parts: np.concatenate([np.asarray(p) for p in parts]).view(Device))
    monkeypatch.setattr(memory, "pinned_empty", lambda n, dtype: np.empty(n, dtype))
    rng = np.random.default_rng(2)
    arrays = [rng.integers(0, 9, 7).astype(np.int32), rng.random(5) < 0.5, rng.integers(0, 9, 3).astype(np.int64),
              np.arange(4, dtype=np.int16), rng.integers(0, 9, 6).astype(np.int32)]
    dev = [a.view(Device) if i != 3 else a for i, a in enumerate(arrays)]
    got = fusion_host._copy_out(SimpleNamespace(backend=SimpleNamespace(xp=xp)), dev)
    assert copies == [7 * 4 + 5 + 3 * 8 + 6 * 4]
    assert got[3] is dev[3]
    for a, g in zip(arrays, got):
        assert type(g) is np.ndarray and g.dtype == a.dtype and g.flags.aligned
        np.testing.assert_array_equal(g, a)
