"""Audit of issue 14's SQL surface: every construct of its Deliver 1-5 (``sql_surface_probes``) run on
DuckDB and on hetdb in the same process, on the CPU and (where CuPy sees a GPU) the GPU, and a table of
the outcome per probe and configuration:

  agree    hetdb's answer equals DuckDB's (multiset unless the probe is ordered; INTERVAL results also as
           Python values), with DuckDB's column names and type family
  names    the values agree, the column names do not
  types    values and names agree, the type family does not (e.g. DATE vs TIMESTAMP, BIGINT vs DOUBLE)
  differ   a wrong answer (or, for a "messages" probe: hetdb's error does not name what the user wrote)
  refused  hetdb refuses the statement (UnsupportedError / SqlError)
  misnamed hetdb refuses it naming a function the user did not write (sqlglot's name, not the user's)
  error    hetdb fails otherwise (an internal error is always a finding)
  oom      hetdb stops with a typed OutOfMemoryError naming the budget (cpu-tiny's 256 KB host budget
           under a window partition of 100,000 rows: a window partition is computed in host memory)

    PYTHONPATH=$PWD/src python scripts/sql_surface_audit.py [--configs cpu,gpu,gpu-tiny] [-k NAME]
                                                             [--section window] [-v] [--out FILE.md]

Configurations: cpu, cpu-tiny (256 KB host budget, 7-row batches), gpu, gpu-tiny (1 MB GPU budget);
the default is cpu, plus gpu where a GPU is visible. Each probe's outcome is printed as it comes
(``-v``: with the detail of each that does not agree), then the table and the totals.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sql_surface_probes import PROBES, SETUP, P  # noqa: E402

import hetdb  # noqa: E402
from hetdb.bench.compare import compare_tables  # noqa: E402
from hetdb.errors import HetdbError, OutOfMemoryError, SqlError, UnsupportedError  # noqa: E402

CONFIGS = {
    "cpu": {"device": "cpu"},
    "cpu-tiny": {"device": "cpu", "host_memory_limit": "256KB", "batch_rows": 7},
    "gpu": {"device": "gpu"},
    "gpu-tiny": {"device": "gpu", "gpu_memory_limit": "1MB"},
}
OUTCOMES = ("agree", "names", "types", "differ", "refused", "misnamed", "error", "oom")


def _misnamed(message: str, sql: str) -> list[str]:
    """Functions a refusal names as ``name()`` that the statement does not contain."""
    return [n for n in re.findall(r"\b(\w+)\(\)", message) if n.lower() not in sql.lower()]


def _family(t: pa.DataType) -> str:
    """The type as a user sees it in DuckDB's type system, coarsely (integer widths aside)."""
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return f"decimal(s={t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_family(t.value_type)}>"
    return str(t)


def _lists_as_text(table: pa.Table) -> pa.Table:
    for i, t in enumerate(table.schema.types):
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            text = [None if v is None else repr(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, table.schema.names[i], pa.array(text, pa.string()))
    return table


def _duck_answer(duck, probe: P):
    for stmt in probe.setup:
        duck.execute(stmt)
    try:
        table = duck.sql(probe.sql).to_arrow_table()
        rows = duck.sql(probe.sql).fetchall() if pa.month_day_nano_interval() in table.schema.types else None
        return table, rows, None
    except duckdb.Error as e:
        return None, None, f"DuckDB raised {type(e).__name__}: {e}"
    finally:
        for stmt in probe.reset:
            duck.execute(stmt)


def _check_error(con, probe: P) -> tuple[str, str]:
    try:
        con.sql(probe.sql).arrow()
    except HetdbError as e:
        if probe.error.lower() in str(e).lower():
            return "agree", ""
        return "differ", f"message does not name {probe.error!r}: {type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - an internal error is a finding of the probe
        return "error", f"internal {type(e).__name__}: {e}"
    return "differ", "the statement succeeded; an error naming it was expected"


def _check_query(con, probe: P, want: pa.Table, want_rows) -> tuple[str, str]:
    try:
        got = con.sql(probe.sql).arrow()
    except (UnsupportedError, SqlError) as e:
        wrong = _misnamed(str(e), probe.sql)
        return ("misnamed" if wrong else "refused"), f"{type(e).__name__}: {e}" + (f" (names {wrong})" if wrong else "")
    except OutOfMemoryError as e:
        return "oom", f"{type(e).__name__}: {e}"
    except HetdbError as e:
        return "error", f"{type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - an internal error is a finding of the probe
        return "error", f"internal {type(e).__name__}: {e}"
    diff = compare_tables(_lists_as_text(got), _lists_as_text(want), ordered=probe.ordered)
    if diff is None and want_rows is not None:
        got_rows = con.sql(probe.sql).fetchall()
        if sorted(got_rows, key=repr) != sorted(want_rows, key=repr):
            diff = f"Python rows differ: {got_rows[:3]} vs DuckDB {want_rows[:3]}"
    if diff is not None:
        return "differ", diff
    if got.column_names != want.column_names:
        return "names", f"{got.column_names} vs DuckDB {want.column_names}"
    gf, wf = [_family(t) for t in got.schema.types], [_family(t) for t in want.schema.types]
    if gf != wf:
        return "types", f"{gf} vs DuckDB {wf}"
    return "agree", ""


def run_config(config: str, probes: list[P], answers: dict, verbose: bool) -> dict[str, tuple[str, str]]:
    options = dict(CONFIGS[config])
    device = options.pop("device")
    results: dict[str, tuple[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp, hetdb.connect(str(Path(tmp) / "db"), device=device, **options) as con:
        for stmt in SETUP:
            con.execute(stmt)
        for probe in probes:
            for stmt in probe.setup:
                con.execute(stmt)
            try:
                if probe.error is not None:
                    outcome = _check_error(con, probe)
                else:
                    want, rows, duck_error = answers[probe.name]
                    outcome = ("error", duck_error) if duck_error else _check_query(con, probe, want, rows)
            finally:
                for stmt in probe.reset:
                    con.execute(stmt)
            results[probe.name] = outcome
            detail = f"\n    {outcome[1][:600]}" if verbose and outcome[0] != "agree" else ""
            print(f"[{config}] {outcome[0]:8} {probe.section}/{probe.name}{detail}", flush=True)
    return results


def table(probes: list[P], configs: list[str], results: dict[str, dict]) -> str:
    lines = ["| section | probe | " + " | ".join(configs) + " |", "|---|---|" + "---|" * len(configs)]
    for p in probes:
        lines.append(f"| {p.section} | {p.name} | " + " | ".join(results[c][p.name][0] for c in configs) + " |")
    lines.append("")
    for c in configs:
        counts = {o: 0 for o in OUTCOMES}
        for outcome, _ in results[c].values():
            counts[outcome] += 1
        lines.append(f"{c}: {len(results[c])} probes: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=None, help="comma-separated: " + ", ".join(CONFIGS))
    ap.add_argument("-k", dest="filter", default=None, help="only probes whose name contains this")
    ap.add_argument("--section", default=None, help="only this section (window, setops, dates, ...)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--out", default=None, help="also write the table (and details) to this file")
    args = ap.parse_args(argv)
    if args.configs:
        configs = args.configs.split(",")
    else:
        from hetdb.backend.gpu import gpu_available

        configs = ["cpu", "gpu"] if gpu_available() else ["cpu"]
    probes = [p for p in PROBES if (not args.filter or args.filter in p.name)
              and (not args.section or p.section == args.section)]
    duck = duckdb.connect()
    duck.execute("SET threads TO 2")
    for stmt in SETUP:
        duck.execute(stmt)
    answers = {p.name: _duck_answer(duck, p) for p in probes if p.error is None}
    results = {c: run_config(c, probes, answers, args.verbose) for c in configs}
    text = table(probes, configs, results)
    print(text)
    if args.out:
        details = [f"- [{c}] {p.section}/{p.name}: {results[c][p.name][0]}: {results[c][p.name][1][:800]}"
                   for c in configs for p in probes if results[c][p.name][0] != "agree"]
        Path(args.out).write_text(text + "\n\n" + "\n".join(details) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
