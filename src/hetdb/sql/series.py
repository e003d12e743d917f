"""The table functions range() and generate_series() with DuckDB's rules: integers (BIGINT) from
start to stop by step (stop excluded by range, included by generate_series; range(n) is 0 .. n-1),
or timestamps from start to stop by an INTERVAL step (DATE arguments count as TIMESTAMPs). The
arguments are constants; the series is made at bind time as an in-memory table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError

FUNCTIONS = ("range", "generate_series")
MAX_ROWS = 1 << 28


def _constant(node: exp.Expression, fname: str):
    """An int, ('timestamp', microseconds) or ('interval', (months, days, micros))."""
    from hetdb.sql.functions_ext import interval_parts
    from hetdb.sql.typing import number_literal, parse_date

    if isinstance(node, exp.Paren):
        return _constant(node.this, fname)
    if isinstance(node, exp.Neg):
        v = _constant(node.this, fname)
        if isinstance(v, int):
            return -v
    if isinstance(node, exp.Literal) and not node.is_string:
        lit = number_literal(node.this)
        if isinstance(lit.value, int) and lit.dtype.is_integer:
            return lit.value
    if isinstance(node, exp.Interval):
        return ("interval", interval_parts(node))
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        kind = node.to.this.value.upper()
        if kind == "DATE":
            return ("timestamp", parse_date(node.this.this) * 86_400_000_000)
        if kind in ("TIMESTAMP", "TIMESTAMPNTZ", "DATETIME"):
            import datetime as dt

            t = dt.datetime.fromisoformat(node.this.this.strip())
            return ("timestamp", (t - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1))
    raise UnsupportedError(f"{fname}() with the argument {node.sql(dialect='duckdb')!r} (write integer "
                           "constants, or DATE/TIMESTAMP constants and an INTERVAL step)")


def series_table(fname: str, args: list[exp.Expression]) -> pa.Table:
    """The one-column table ``fname(*args)`` returns (its column named after the function); sqlglot
    reads range(n) as (0, n)."""
    vals = [_constant(a, fname) for a in args]
    inclusive = fname == "generate_series"
    if not 1 <= len(vals) <= 3:
        raise SqlError(f"{fname}() takes (stop), (start, stop) or (start, stop, step)")
    if all(isinstance(v, int) for v in vals):
        start, stop, step = vals[0], vals[1], vals[2] if len(vals) == 3 else 1
        if step == 0:
            raise SqlError(f"{fname}(): the step must not be 0")
        if inclusive:
            stop = stop + (1 if step > 0 else -1)
        n = max(0, -(-(stop - start) // step))
        if n > MAX_ROWS:
            raise UnsupportedError(f"{fname}() of {n:,} rows (at most {MAX_ROWS:,})")
        return pa.table({fname: pa.array(np.arange(start, stop, step, dtype=np.int64)[:n])})
    if len(vals) != 3 or not (vals[0][0] == vals[1][0] == "timestamp" and vals[2][0] == "interval"):
        raise SqlError(f"{fname}() of timestamps takes (start, stop, INTERVAL step)")
    return pa.table({fname: pa.array(_timestamps(fname, vals[0][1], vals[1][1], vals[2][1], inclusive),
                                     pa.int64()).cast(pa.timestamp("us"))})


def _timestamps(fname: str, start: int, stop: int, step: tuple[int, int, int], inclusive: bool) -> list[int]:
    from hetdb.exec.functions_datetime import _add_months

    months, days, micros = step
    if months == 0 and days == 0 and micros == 0:
        raise SqlError(f"{fname}(): the INTERVAL step must not be 0")
    forward = (months, days, micros) > (0, 0, 0) if months or days else micros > 0
    out: list[int] = []
    day_us = 86_400_000_000
    v = start
    while not ((v > stop or (v == stop and not inclusive)) if forward else (v < stop or (v == stop and not inclusive))):
        out.append(v)
        if len(out) > MAX_ROWS:
            raise UnsupportedError(f"{fname}() of more than {MAX_ROWS:,} rows")
        d, tod = divmod(v, day_us)  # each step adds the interval to the previous value (DuckDB)
        if months:
            d = int(_add_months(np, np.array([d], np.int64), months)[0])
        v = (d + days) * day_us + tod + micros
    return out


def series_args(fn: exp.Expression) -> tuple[str, list[exp.Expression]]:
    """(function name as written in DuckDB, its arguments) of a range()/generate_series() node."""
    if isinstance(fn, exp.GenerateSeries):
        name = "range" if fn.args.get("is_end_exclusive") else "generate_series"
        args = [fn.args[k] for k in ("start", "end", "step") if fn.args.get(k) is not None]
        return name, args
    first = fn.args.get("this")
    return str(fn.this).lower(), ([first] if isinstance(first, exp.Expression) else []) + list(fn.expressions)
