"""Round trips of every type (NULLs, edge values) through the writer and through each import format."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_helpers import assert_tables_equal, edge_table, schema_of

from hetdb.column import Batch
from hetdb.storage import Database
from hetdb.storage.ingest import import_files


@pytest.mark.parametrize("n,rows_per_page", [(0, 7), (1, 1), (1, 7), (23, 1), (23, 7), (23, 1000),
                                             (2500, 7), (2500, 1000)])
def test_writer_round_trip_every_type(db: Database, n: int, rows_per_page: int) -> None:
    src = edge_table(n)
    with db.create_table("t", schema_of(src), rows_per_page=rows_per_page) as w:
        # uneven appends: the writer must cut pages across batch boundaries
        for start, length in ((0, 5), (5, 1), (6, n)):
            w.append_arrow(src.slice(start, length))
    r = db.table("t")
    assert r.num_rows == n
    assert r.num_row_groups == -(-n // rows_per_page)
    assert sum(r.row_group_rows(g) for g in range(r.num_row_groups)) == n
    assert all(r.row_group_start(g) == g * rows_per_page for g in range(r.num_row_groups))
    assert assert_tables_equal(r.arrow(), src) == n * src.num_columns
    assert r.arrow(["str", "i32"]).schema.names == ["str", "i32"]


def test_append_host_batch(db: Database) -> None:
    src = edge_table(40)
    with db.create_table("t", schema_of(src), rows_per_page=9) as w:
        w.append(Batch.from_arrow(src.slice(0, 17)))
        w.append(Batch.from_arrow(src.slice(17)))
        assert w.rows_written == 36  # four full pages cut so far
    assert assert_tables_equal(db.table("t").arrow(), src) == 40 * src.num_columns


def test_read_returns_columns_and_batches(db: Database) -> None:
    src = edge_table(30)
    with db.create_table("t", schema_of(src), rows_per_page=10) as w:
        w.append_arrow(src)
    r = db.table("t")
    col = r.read("i64", 1)
    assert len(col) == 10
    assert col.to_arrow().equals(src.column("i64").slice(10, 10).combine_chunks())
    batches = list(r.scan(["i32", "color"], row_groups=[2, 0]))
    assert [b.num_rows for b in batches] == [10, 10]
    assert batches[0]["i32"].to_arrow().equals(src.column("i32").slice(20, 10).combine_chunks())
    # decode() of the raw bytes gives the same column, viewing the bytes without decoding fixed-width data
    loc = r.page_location("i64", 1)
    with open(loc.path, "rb") as f:
        f.seek(loc.offset)
        raw = np.frombuffer(f.read(loc.padded_length), np.uint8)
    sections = r.page_sections("i64", 1)
    assert sections["data"] == (0, 80)
    assert np.array_equal(raw[:80].view(np.int64), col.data)  # the page bytes are the value array
    assert set(sections) == ({"data", "validity"} if col.validity is not None else {"data"})
    decoded = r.decode("i64", 1, raw)
    assert np.array_equal(decoded.data, col.data)
    assert np.shares_memory(decoded.data, raw)


def _canonical(src: pa.Table) -> pa.Table:
    return src  # edge_table already uses hetdb's canonical Arrow types


@pytest.mark.parametrize("fmt", ["parquet", "ipc", "ipc-stream", "feather", "csv", "csv.gz", "tsv"])
@pytest.mark.parametrize("n,rows_per_page", [(0, 7), (1, 7), (23, 7), (1500, 1000)])
def test_import_round_trip(tmp_path, db: Database, fmt: str, n: int, rows_per_page: int) -> None:
    src = edge_table(n)
    if fmt == "parquet":
        path = tmp_path / "in.parquet"
        pq.write_table(src, path, row_group_size=500)
    elif fmt == "ipc":
        path = tmp_path / "in.arrow"
        with pa.ipc.new_file(path, src.schema) as wr:
            for b in src.to_batches(max_chunksize=300):
                wr.write_batch(b)
    elif fmt == "ipc-stream":
        path = tmp_path / "in.ipc"
        with pa.ipc.new_stream(path, src.schema) as wr:
            wr.write_table(src)
    elif fmt == "feather":
        path = tmp_path / "in.feather"
        feather.write_feather(src, path)
    else:
        name = {"csv": "in.csv", "csv.gz": "in.csv.gz", "tsv": "in.tsv"}[fmt]
        path = tmp_path / name
        opts = pcsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ",")
        stream = pa.CompressedOutputStream(path, "gzip") if fmt == "csv.gz" else pa.OSFile(str(path), "wb")
        with stream:
            pcsv.write_csv(src, stream, opts)
    csv_options = None
    if fmt.startswith(("csv", "tsv")):
        csv_options = {"column_types": {f.name: f.type for f in src.schema}, "block_size": 4096}
    r = import_files(db, "t", [str(path)], rows_per_page=rows_per_page, csv_options=csv_options)
    assert r.num_rows == n
    assert assert_tables_equal(r.arrow(), src) == n * src.num_columns


def test_import_several_files_is_one_table(tmp_path, db: Database) -> None:
    src = edge_table(60)
    paths = []
    for k in range(3):
        p = tmp_path / f"part{k}.parquet"
        pq.write_table(src.slice(k * 20, 20), p)
        paths.append(str(p))
    r = import_files(db, "t", paths, rows_per_page=7)
    assert assert_tables_equal(r.arrow(), src) == 60 * src.num_columns


_value_types = {
    "int32": (st.integers(-2**31, 2**31 - 1), pa.int32()),
    "int64": (st.integers(-2**63, 2**63 - 1), pa.int64()),
    "float64": (st.floats(allow_nan=True, allow_infinity=True), pa.float64()),
    "bool": (st.booleans(), pa.bool_()),
    "string": (st.text(max_size=12), pa.string()),
    "lowcard": (st.sampled_from(["a", "bb", "", "ccc"]), pa.string()),
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), rows_per_page=st.sampled_from([1, 3, 7, 50]))
def test_random_tables_round_trip(tmp_path_factory, data, rows_per_page: int) -> None:
    db = Database.open(str(tmp_path_factory.mktemp("db")), create=True)
    n = data.draw(st.integers(0, 60))
    cols = {}
    for kind, (values, atype) in _value_types.items():
        cols[kind] = pa.array(data.draw(st.lists(st.one_of(st.none(), values), min_size=n, max_size=n)), atype)
    src = pa.table(cols)
    with db.create_table("t", schema_of(src), rows_per_page=rows_per_page) as w:
        w.append_arrow(src)
    assert assert_tables_equal(db.table("t").arrow(), src) == n * len(cols)
