"""Statements other than queries: CREATE TABLE [AS], INSERT, DROP, CREATE VIEW, COPY, DESCRIBE,
SHOW TABLES, SUMMARIZE, EXPLAIN [ANALYZE], SET/RESET, UPDATE and DELETE, VACUUM/CHECKPOINT. Each
returns an Arrow table (DuckDB's result columns where it has one).

Every change to a table is one new table version written by the storage writer and published by
its atomic commit: a crash leaves the old version or the new one, never a mix. INSERT appends (the
new version references the existing row groups and adds row groups for the new rows; small trailing
row groups are merged, storage/append.py); UPDATE and DELETE rewrite the table; VACUUM rewrites a
table whose row groups are smaller than they could be.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pyarrow as pa
from sqlglot import exp

from hetdb import types as T
from hetdb.errors import CatalogError, HetdbError, InputError, SqlError, UnsupportedError
from hetdb.exec.ddl_values import _NOT_CONST, _column, _conform, _constant, summarize
from hetdb.sql.statements import Statement
from hetdb.storage.format import ColumnSpec
from hetdb.storage.views import create_view, drop_view, find_view, load_views

EMPTY = pa.table({})

_TYPE_NAMES = {"INT": "INTEGER", "INT4": "INTEGER", "INTEGER": "INTEGER", "SMALLINT": "INTEGER",
               "TINYINT": "INTEGER", "INT2": "INTEGER", "INT1": "INTEGER", "BIGINT": "BIGINT", "INT8": "BIGINT",
               "LONG": "BIGINT", "DOUBLE": "DOUBLE", "FLOAT8": "DOUBLE", "DOUBLE PRECISION": "DOUBLE",
               "DATE": "DATE", "BOOLEAN": "BOOLEAN", "BOOL": "BOOLEAN", "VARCHAR": "VARCHAR",
               "TEXT": "VARCHAR", "STRING": "VARCHAR", "CHAR": "VARCHAR", "BPCHAR": "VARCHAR",
               "TIMESTAMP": "TIMESTAMP", "DATETIME": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE",
               "TIMESTAMP WITH TIME ZONE": "TIMESTAMP WITH TIME ZONE", "TIME": "TIME"}


def count_result(n: int) -> pa.Table:
    return pa.table({"Count": pa.array([n], pa.int64())})


def sql_type(dt: exp.DataType) -> T.DataType:
    """hetdb's type for a column type written in CREATE TABLE."""
    text = dt.sql(dialect="duckdb").upper()
    base = text.split("(")[0].strip()
    if base in ("DECIMAL", "NUMERIC"):
        params = [int(p.this.this) if isinstance(p.this, exp.Literal) else int(p.name)
                  for p in dt.expressions]
        p, s = (params + [18, 3])[:2] if params else (18, 3)
        if len(params) == 1:
            s = 0
        return T.decimal(p, s)
    name = _TYPE_NAMES.get(base)
    if name is None:
        raise UnsupportedError(f"column type {text} (hetdb stores INTEGER, BIGINT, DOUBLE, DECIMAL(p<=18,s), "
                               "DATE, TIMESTAMP, TIMESTAMPTZ, TIME, BOOLEAN, VARCHAR)")
    return T.DataType.parse(name)


def _table_name(node: exp.Expression) -> str:
    while isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table):
        raise SqlError(f"expected a table name, got {node.sql(dialect='duckdb')!r}")
    if node.args.get("db") is not None:
        raise UnsupportedError(f"schema-qualified names ({node.sql(dialect='duckdb')}): a hetdb "
                               "database has one schema")
    return node.name


def _stored_name(db, name: str) -> str | None:
    for t in db.tables():
        if t.lower() == name.lower():
            return t
    return None


class StatementRunner:
    """Runs non-query statements against one connection."""

    def __init__(self, con) -> None:
        self.con = con

    @property
    def db(self):
        return self.con.db

    def run(self, st: Statement) -> pa.Table:
        fn = getattr(self, f"_{st.kind}", None)
        if fn is None:
            raise UnsupportedError(f"{st.kind.upper()} statements")
        return fn(st)

    # ---- tables -----------------------------------------------------------------------------------
    def _create(self, st: Statement) -> pa.Table:
        tree = st.tree
        kind = (tree.args.get("kind") or "").upper()
        if kind == "VIEW":
            return self._create_view(st)
        if kind != "TABLE":
            raise UnsupportedError(f"CREATE {kind}")
        if tree.args.get("properties") is not None and any(
                isinstance(p, exp.TemporaryProperty) for p in tree.args["properties"].expressions):
            raise UnsupportedError("CREATE TEMPORARY TABLE (every hetdb table is stored)")
        name = _table_name(tree.this)
        existing = _stored_name(self.db, name)
        replace = bool(tree.args.get("replace"))
        if existing is not None and not replace:
            if tree.args.get("exists"):
                return EMPTY
            raise CatalogError(f"table '{existing}' already exists (CREATE OR REPLACE TABLE replaces it, "
                               "CREATE TABLE IF NOT EXISTS keeps it)")
        if find_view(self.db, name) is not None:
            raise CatalogError(f"'{name}' is a view; DROP VIEW {name} first")
        name = existing or name
        query = tree.args.get("expression")
        if query is not None:
            data = self.con._query_arrow(query.sql(dialect="duckdb"))
            if len(set(n.lower() for n in data.column_names)) != data.num_columns:
                raise CatalogError("CREATE TABLE AS: the query returns several columns with one name; "
                                   "give them distinct aliases")
            schema = [ColumnSpec(f.name, T.from_arrow(f.type, f.name), True) for f in data.schema]
            self._write(name, schema, data)
            return EMPTY
        if not isinstance(tree.this, exp.Schema):
            raise SqlError("CREATE TABLE needs a column list or AS SELECT")
        specs = []
        for col in tree.this.expressions:
            if not isinstance(col, exp.ColumnDef):
                raise UnsupportedError(f"table constraint {col.sql(dialect='duckdb')}")
            if col.args.get("kind") is None:
                raise SqlError(f"column '{col.name}' needs a type")
            nullable = not any(isinstance(c.kind, exp.NotNullColumnConstraint)
                               for c in col.args.get("constraints") or [])
            specs.append(ColumnSpec(col.name, sql_type(col.args["kind"]), nullable))
        self._write(name, specs, None)
        return EMPTY

    def _write(self, name: str, schema: list[ColumnSpec], new: pa.Table | None) -> None:
        """Write ``new`` (or no rows) as a new version of ``name`` replacing what it held."""
        with self.db.create_table(name, schema, replace=True) as w:
            if new is not None and new.num_rows:
                w.append_arrow(_conform(new, schema))
        self.con._tables_changed()

    def _append(self, name: str, schema: list[ColumnSpec], new: pa.Table) -> None:
        """Append ``new`` to ``name`` as a new version that keeps the existing row groups. The writer
        takes the table's lock and appends to the version committed then, so concurrent INSERTs
        lose nothing; a table replaced meanwhile by one of another schema is refused."""
        if not new.num_rows:
            return
        data = _conform(new, schema)
        with self.db.append_table(name, data.num_rows) as w:
            if list(w.schema) != schema:
                raise CatalogError(f"table '{name}' changed while this statement ran; run it again")
            w.append_arrow(data)
        self.con._tables_changed()

    def _insert(self, st: Statement) -> pa.Table:
        tree = st.tree
        if tree.args.get("by_name") or tree.args.get("overwrite") or tree.args.get("conflict"):
            raise UnsupportedError("INSERT BY NAME / OR REPLACE / ON CONFLICT")
        name = _table_name(tree.this)
        stored = _stored_name(self.db, name)
        if stored is None:
            from hetdb.storage.reader import did_you_mean

            raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.db.tables())}")
        reader = self.db.table(stored)
        schema = list(reader.schema)
        cols = [c.name for c in schema]
        target = cols
        if isinstance(tree.this, exp.Schema) and tree.this.expressions:
            target = []
            for ident in tree.this.expressions:
                match = [c for c in cols if c.lower() == ident.name.lower()]
                if not match:
                    raise CatalogError(f"table '{stored}' has no column '{ident.name}' (columns: {', '.join(cols)})")
                target.append(match[0])
        source = tree.args.get("expression")
        if isinstance(source, exp.Values):
            types = {c.name: c.dtype for c in schema}
            data = self._values(source, [types[t] for t in target])
        else:
            data = self.con._query_arrow(source.sql(dialect="duckdb"))
        if data.num_columns != len(target):
            raise SqlError(f"INSERT into '{stored}' names {len(target)} columns but the "
                           f"{'VALUES rows have' if isinstance(source, exp.Values) else 'query returns'} "
                           f"{data.num_columns}")
        by_target = dict(zip(target, data.columns))
        new = pa.table({c.name: by_target.get(c.name, pa.nulls(data.num_rows, c.dtype.to_arrow()))
                        for c in schema})
        for c in schema:
            if not c.nullable and new.column(c.name).null_count:
                raise InputError(f"INSERT into '{stored}': column '{c.name}' is NOT NULL but a row gives NULL")
        self._append(stored, schema, new)
        return count_result(new.num_rows)

    def _values(self, values: exp.Values, types: list[T.DataType]) -> pa.Table:
        """VALUES rows as an Arrow table: literal rows converted in Python, others evaluated by a
        query with each value cast to its target column's type."""
        width = len(types)
        rows = []
        for row in values.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            if len(items) != width:
                raise SqlError(f"a VALUES row has {len(items)} values, expected {width}")
            rows.append(items)
        consts = [[_constant(e) for e in r] for r in rows]
        if all(v is not _NOT_CONST for r in consts for v in r):
            cols = list(zip(*consts)) if consts else [()] * width
            return pa.table({f"c{i}": _column(list(c)) for i, c in enumerate(cols)})
        text = " UNION ALL ".join("SELECT " + ", ".join(f"CAST({e.sql(dialect='duckdb')} AS {types[i]}) AS c{i}"
                                                        for i, e in enumerate(r)) for r in rows)
        return self.con._query_arrow(text)

    def _drop(self, st: Statement) -> pa.Table:
        tree = st.tree
        kind = (tree.args.get("kind") or "").upper()
        if tree.args.get("cascade"):
            raise UnsupportedError("DROP ... CASCADE")
        for t in tree.args.get("tables") or [tree.this]:
            name = _table_name(t)
            if kind == "VIEW":
                if not drop_view(self.db, name) and not tree.args.get("exists"):
                    raise CatalogError(f"unknown view '{name}'")
            elif kind == "TABLE":
                stored = _stored_name(self.db, name)
                if stored is None:
                    if tree.args.get("exists"):
                        continue
                    if find_view(self.db, name) is not None:
                        raise CatalogError(f"'{name}' is a view: use DROP VIEW {name}")
                    from hetdb.storage.reader import did_you_mean

                    raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.db.tables())}")
                self.db.drop_table(stored)
                self.con._tables_changed()
            else:
                raise UnsupportedError(f"DROP {kind}")
        return EMPTY

    def _create_view(self, st: Statement) -> pa.Table:
        tree = st.tree
        name = _table_name(tree.this)
        query = tree.args.get("expression")
        if query is None:
            raise SqlError("CREATE VIEW needs AS SELECT ...")
        if isinstance(tree.this, exp.Schema) and tree.this.expressions:
            raise UnsupportedError("CREATE VIEW with a column list (alias the columns in the SELECT)")
        if find_view(self.db, name) is not None and tree.args.get("exists") and not tree.args.get("replace"):
            return EMPTY
        text = query.sql(dialect="duckdb")
        self.con._plan_only(text)  # a view that does not bind is refused now, not at first use
        create_view(self.db, name, text, replace=bool(tree.args.get("replace")))
        self.con._tables_changed()
        return EMPTY

    # ---- data out ---------------------------------------------------------------------------------
    def _copy(self, st: Statement) -> pa.Table:
        tree = st.tree
        if tree.args.get("kind"):  # COPY t FROM 'file'
            raise UnsupportedError("COPY ... FROM (use INSERT INTO t SELECT * FROM 'file', or hetdb import)")
        files = tree.args.get("files") or []
        if len(files) != 1 or not isinstance(files[0], exp.Literal):
            raise SqlError("COPY ... TO needs one file name in quotes")
        path = files[0].this
        opts: dict[str, Any] = {}
        for p in tree.args.get("params") or []:
            key = p.this.name.lower() if p.this is not None else ""
            val = p.args.get("expression")
            opts[key] = True if val is None else (val.name if isinstance(val, (exp.Var, exp.Column)) else
                                                  val.this if isinstance(val, exp.Literal) else
                                                  val.sql(dialect="duckdb"))
        src = tree.this
        if isinstance(src, exp.Table):
            query = f'SELECT * FROM "{_table_name(src)}"'
        else:
            query = (src.this if isinstance(src, exp.Subquery) else src).sql(dialect="duckdb")
        data = self.con._query_arrow(query)
        fmt = str(opts.pop("format", "")).lower() or ("csv" if path.lower().endswith((".csv", ".tsv", ".txt"))
                                                      else "parquet")
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                codec = str(opts.pop("compression", opts.pop("codec", "snappy"))).lower()
                opts.pop("row_group_size", None)
                _no_more(opts, "parquet")
                pq.write_table(data, path, compression=codec)
            elif fmt == "csv":
                import pyarrow.csv as pcsv

                header = opts.pop("header", True)
                header = header if isinstance(header, bool) else str(header).lower() not in ("false", "0")
                delim = opts.pop("delimiter", opts.pop("delim", opts.pop("sep", ",")))
                _no_more(opts, "csv")
                pcsv.write_csv(data, path, write_options=pcsv.WriteOptions(include_header=header,
                                                                           delimiter=delim,
                                                                           quoting_style="needed"))
            else:
                raise UnsupportedError(f"COPY ... (FORMAT {fmt}) (use parquet or csv)")
        except OSError as e:
            raise InputError(f"cannot write '{path}': {e}") from None
        return count_result(data.num_rows)

    # ---- catalog ----------------------------------------------------------------------------------
    def _describe(self, st: Statement) -> pa.Table:
        target = st.tree.this
        if isinstance(target, exp.Table) and not isinstance(target.this, exp.Func):
            query = f'SELECT * FROM "{_table_name(target)}"' if not target.this.quoted else \
                f"SELECT * FROM {target.sql(dialect='duckdb')}"
        else:
            query = target.sql(dialect="duckdb")
        plan = self.con._plan_only(query)
        names = [f.name for f in plan.fields]
        return pa.table({"column_name": names,
                         "column_type": [f.dtype.sql_name() for f in plan.fields],
                         "null": ["YES"] * len(names),
                         "key": pa.nulls(len(names), pa.string()),
                         "default": pa.nulls(len(names), pa.string()),
                         "extra": pa.nulls(len(names), pa.string())})

    def _show(self, st: Statement) -> pa.Table:
        what = st.tree.name.upper()
        if what not in ("TABLES", "ALL TABLES"):
            raise UnsupportedError(f"SHOW {what} (SHOW TABLES and DESCRIBE are supported)")
        names = sorted(set(self.db.tables()) | set(load_views(self.db)) | set(self.con._registered))
        return pa.table({"name": pa.array(names, pa.string())})

    def _summarize(self, st: Statement) -> pa.Table:
        target = st.tree.this
        query = f'SELECT * FROM "{_table_name(target)}"' if isinstance(target, exp.Table) \
            else target.sql(dialect="duckdb")
        data = self.con._query_arrow(query)
        plan = self.con._plan_only(query)
        return summarize(data, [f.dtype for f in plan.fields])

    def _explain(self, st: Statement, analyze: bool = False) -> pa.Table:
        text = self.con._explain_text(st.text, analyze)
        return pa.table({"explain_key": ["analyzed_plan" if analyze else "physical_plan"],
                         "explain_value": [text]})

    def _explain_analyze(self, st: Statement) -> pa.Table:
        return self._explain(st, analyze=True)

    # ---- settings ---------------------------------------------------------------------------------
    def _set(self, st: Statement) -> pa.Table:
        for item in st.tree.expressions:
            eq = item.this
            if not isinstance(eq, exp.EQ):
                raise SqlError(f"SET expects name = value, got {item.sql(dialect='duckdb')!r}")
            name = eq.this.name.lower()
            val = eq.expression
            value: Any = val.this if isinstance(val, exp.Literal) else bool(val.this) \
                if isinstance(val, exp.Boolean) else val.name
            if isinstance(val, exp.Literal) and not val.is_string:
                value = int(val.this) if val.this.isdigit() else float(val.this)
            self.con.set_option(name, value)
        return EMPTY

    def _reset(self, st: Statement) -> pa.Table:
        parts = st.text.split()
        if len(parts) != 2:
            raise SqlError("RESET expects one option name, e.g. RESET threads")
        self.con.reset_option(parts[1].lower())
        return EMPTY

    def _rewrite(self, name: str, query: str, count_query: str | None) -> int:
        """Replace table ``name`` by the rows of ``query`` (over its current version, read while the
        writer exists); returns the rows ``count_query`` counts, else the rows that went away."""
        schema = list(self.db.table(name).schema)
        with self.db.create_table(name, schema, replace=True) as w:
            before = self.db.table(name).num_rows
            counted = self.con._query_arrow(count_query).column(0)[0].as_py() if count_query else None
            data = self.con._query_arrow(query)
            data = pa.table(dict(zip([c.name for c in schema], data.columns)))
            if data.num_rows:
                w.append_arrow(_conform(data, schema))
        self.con._tables_changed()
        return counted if counted is not None else before - data.num_rows

    def _target(self, tree: exp.Expression, what: str) -> str:
        if tree.args.get("using") or tree.args.get("from") or tree.args.get("from_") or tree.args.get("returning"):
            raise UnsupportedError(f"{what} with USING / FROM / RETURNING")
        name = _table_name(tree.this)
        stored = _stored_name(self.db, name)
        if stored is None:
            from hetdb.storage.reader import did_you_mean

            raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.db.tables())}")
        return stored

    def _update(self, st: Statement) -> pa.Table:
        """UPDATE as a new version: every row, with the SET columns recomputed where WHERE holds."""
        tree = st.tree
        name = self._target(tree, "UPDATE")
        schema = {c.name.lower(): c for c in self.db.table(name).schema}
        where = tree.args.get("where")
        cond = f"coalesce(({where.this.sql(dialect='duckdb')}), false)" if where is not None else None
        sets: dict[str, str] = {}
        for eq in tree.expressions:
            col = eq.this.name.lower() if isinstance(eq, exp.EQ) and isinstance(eq.this, exp.Column) else None
            if col not in schema:
                raise CatalogError(f"UPDATE {name}: no column {eq.this.sql(dialect='duckdb') if isinstance(eq, exp.EQ) else eq}")
            sets[col] = f"CAST(({eq.expression.sql(dialect='duckdb')}) AS {schema[col].dtype})"
        items = []
        for key, spec in schema.items():
            ref = f'"{spec.name}"'
            if key in sets:
                value = f"CASE WHEN {cond} THEN {sets[key]} ELSE {ref} END" if cond else sets[key]
                items.append(f'{value} AS "{spec.name}"')
            else:
                items.append(ref)
        query = f'SELECT {", ".join(items)} FROM "{name}"'
        count = f'SELECT count(*) FROM "{name}"' + (f" WHERE {cond}" if cond else "")
        return count_result(self._rewrite(name, query, count))

    def _delete(self, st: Statement) -> pa.Table:
        """DELETE as a new version holding the rows WHERE does not select (NULL keeps a row)."""
        tree = st.tree
        name = self._target(tree, "DELETE")
        where = tree.args.get("where")
        keep = f" WHERE NOT coalesce(({where.this.sql(dialect='duckdb')}), false)" if where is not None else " WHERE false"
        return count_result(self._rewrite(name, f'SELECT * FROM "{name}"{keep}', None))

    def _vacuum(self, st: Statement) -> pa.Table:
        """VACUUM [table] / CHECKPOINT [table]: rewrite each table (or the one named) whose row
        groups are smaller than they could be (many small INSERTs) into full row groups."""
        from hetdb.storage.append import fragmented

        words = st.text.split()
        if len(words) > 2:
            raise SqlError(f"{words[0].upper()} takes at most one table name")
        if len(words) == 2:
            name = words[1].strip('"')
            stored = _stored_name(self.db, name)
            if stored is None:
                from hetdb.storage.reader import did_you_mean

                raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.db.tables())}")
            names = [stored]
        else:
            names = self.db.tables()
        for name in names:
            if not fragmented(self.db.table(name)):
                continue
            old = self.db.table(name)
            with self.db.create_table(name, old.schema, rows_per_page=old.rows_per_page, replace=True) as w:
                current = self.db.table(name)  # under the writer's lock: the latest commit
                for batch in current.scan():
                    w.append(batch)
            self.con._tables_changed()
        return EMPTY

    def _pragma(self, st: Statement) -> pa.Table:
        from hetdb.exec.pragmas import run_pragma

        return run_pragma(self.con, st.tree)


def _no_more(opts: dict, fmt: str) -> None:
    if opts:
        raise UnsupportedError(f"COPY ... TO {fmt} options {sorted(opts)}")


def options_with(options, name: str, value: Any, defaults) -> Any:
    """Connection options with one changed by SET (``value`` None: RESET to ``defaults``)."""
    from hetdb.config import parse_bytes

    aliases = {"memory_limit": "host_memory_limit", "max_memory": "host_memory_limit",
               "temp_directory": "spill_dir", "worker_threads": "threads", "enable_zone_maps": "zone_maps"}
    key = aliases.get(name, name)
    fields = {f.name for f in dataclasses.fields(options)} - {"device", "disabled_passes"}
    if key not in fields:
        raise CatalogError(f"unknown option '{name}' (SET accepts: {', '.join(sorted(fields | set(aliases)))})")
    if value is None:
        return dataclasses.replace(options, **{key: getattr(defaults, key)})
    if key.endswith("_limit"):
        value = None if str(value).lower() in ("none", "default") else parse_bytes(value)
    elif key == "timezone":
        from hetdb.exec.timezones import zone

        zone(str(value))
        value = str(value)
    elif key == "gpu_batch_bytes":
        value = parse_bytes(value)
        if value < 0:
            raise SqlError(f"SET {name}: must be 0 (row group by row group) or a size such as 64MB")
    elif key in ("threads", "batch_rows", "recursion_limit"):
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise SqlError(f"SET {name}: expected a whole number, got {value!r}") from None
        if value < 1:
            raise SqlError(f"SET {name}: must be at least 1")
    elif key == "gpu_encoded_min_blocks":
        from hetdb.backend.gpu.codegen.spec import MAX_MIN_BLOCKS

        try:
            value = int(value)
        except (TypeError, ValueError):
            raise SqlError(f"SET {name}: expected a whole number, got {value!r}") from None
        if not 0 <= value <= MAX_MIN_BLOCKS:
            raise SqlError(f"SET {name}: must be 0 (no cap) to {MAX_MIN_BLOCKS}")
    elif key == "gpu_coprocess":
        from hetdb.cache.coscan import check_coprocess

        value = check_coprocess(str(value).lower())
    elif key == "gpu_cache_admission":
        from hetdb.cache.router import check_admission

        value = check_admission(str(value).lower())
    elif key == "gpu_zero_copy":
        from hetdb.cache.router import check_zero_copy

        value = check_zero_copy(str(value).lower())
    elif key == "gpu_compressed_cache" and not isinstance(value, bool) and str(value).lower() == "auto":
        value = "auto"
    elif key in ("zone_maps", "reuse_fused_state", "gpu_hot_replay", "gpu_compressed_cache", "gpu_delivery_overlap",
                 "gpu_stream_encoded", "gpu_early_scan", "gpu_early_dims", "gpu_copy_neighbours",
                 "gpu_host_small_builds", "gpu_decoded_placement", "gpu_resident_split"):
        value = value if isinstance(value, bool) else str(value).lower() in ("true", "1", "on")
    elif key == "spill_dir":
        value = os.fspath(value)
    return dataclasses.replace(options, **{key: value})


__all__ = ["StatementRunner", "summarize", "options_with", "HetdbError"]
