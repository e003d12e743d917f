"""Issue 14's SQL surface in the fuzz generator (``diff_fuzzgen.FuzzGen``): the string, regular-
expression, date/time and math functions an analyst uses, and the window forms the binder rewrites.

- text: replace (also of ''), split_part (negative and out-of-range parts), lpad/rpad, left/right,
  reverse, repeat, strpos, trim with characters, starts_with/contains/ends_with, regexp_matches /
  regexp_replace / regexp_extract with options, md5, strlen, s[a:b] subscripts, LIKE ... ESCAPE;
- dates and timestamps: strftime, date_diff and date_sub of every part, EXTRACT of the calendar and
  ISO parts (week, isoyear, yearweek, doy, quarter, isodow, era), date_trunc of week/quarter/decade/
  century, last_day, epoch_ms;
- numbers: log/ln/log10/log2 of a positive value, sign, TRY_CAST to TINYINT/SMALLINT, CAST to FLOAT;
- windows: bool_and/bool_or, count(DISTINCT ...), median/quantile_cont over a whole partition.

Every draw that decides the shape uses ``gen.r`` (``pick``/``chance``) and every constant ``gen.v``
(``value``), as in diff_fuzzgen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from diff_fuzzgen import BIG, DATE, DBL, DEC, INT, STR, TSTAMP, E

if TYPE_CHECKING:
    from diff_fuzzgen import FuzzGen, Scope

_DATE_DIFF_PARTS = ["year", "quarter", "month", "week", "day"]
_TS_DIFF_PARTS = ["day", "hour", "minute", "second", "millisecond"]
_DATE_EXTRACT = ["quarter", "doy", "week", "isoyear", "yearweek", "isodow", "dow", "era", "decade", "century"]
_TS_EXTRACT = ["hour", "minute", "second", "millisecond", "microsecond", "doy", "week"]
_REPLACEMENTS = ["'_'", "'\\2\\1'", "''"]  # '\2\1': the groups swapped
_FORMATS = ["'%Y-%m-%d'", "'%d/%m/%Y %j'", "'%a %b %e'", "'%U %W %V %G %u'", "'%H:%M:%S.%f'", "'%I %p %y'"]


def _num_text(gen: FuzzGen, base: E, kind_in: str) -> E | None:
    b = base.sql
    form = gen.r.randrange(4)
    if form == 0 and "big" not in base.tags:  # a positive argument: log of <= 0 raises in DuckDB
        fn = gen.pick(["ln", "log", "log10", "log2"])
        return E(f"{fn}(abs({b}) + 1)", DBL, base.tags)
    if form == 1 and kind_in in (INT, BIG, DEC):
        return E(f"sign({b})", INT, base.tags)
    if form == 2 and kind_in in (INT, BIG, DEC, DBL):
        return E(f"TRY_CAST({b} AS {gen.pick(['TINYINT', 'SMALLINT', 'UTINYINT'])})", INT, base.tags)
    if form == 3 and kind_in in (INT, DEC):
        return E(f"CAST({b} AS FLOAT)", DBL, base.tags)
    return None


def _text(gen: FuzzGen, base: E) -> E:
    b = base.sql
    n = gen.value([-2, -1, 0, 1, 2, 3, 7])
    forms = [
        lambda: E(f"replace({b}, {gen.value(repr_list(['a', '', 'p', 'é']))}, {gen.value(repr_list(['', 'X', 'zz']))})",
                  STR, base.tags),
        lambda: E(f"split_part({b}, {gen.value(repr_list(['a', '-', '', ' ']))}, {n})", STR, base.tags),
        lambda: E(f"{gen.pick(['lpad', 'rpad'])}({b}, {abs(n) + 2}, {gen.value(repr_list(['*', 'ab']))})",
                  STR, base.tags),
        lambda: E(f"{gen.pick(['left', 'right'])}({b}, {n})", STR, base.tags),
        lambda: E(f"reverse({b})", STR, base.tags),
        lambda: E(f"repeat({b}, {abs(n) % 3})", STR, base.tags),
        lambda: E(f"strpos({b}, {gen.value(repr_list(['a', 'e', '', 'xyz']))})", BIG, base.tags),
        lambda: E(f"trim({b}, {gen.value(repr_list(['a', ' x', 'é']))})", STR, base.tags),
        lambda: E(f"CASE WHEN {gen.pick(['starts_with', 'contains', 'ends_with'])}({b}, "
                  f"{gen.value(repr_list(['a', 'e', '']))}) THEN 1 ELSE 0 END", INT, base.tags),
        lambda: E(f"CASE WHEN regexp_matches({b}, {gen.value(repr_list(['^[a-m]', 'A.', '[0-9]+$']))}"
                  f"{gen.pick(['', ', ' + repr('i'), ', ' + repr('c')])}) THEN 1 ELSE 0 END", INT, base.tags),
        lambda: E(f"regexp_replace({b}, {gen.value(repr_list(['[aeiou]', '(.)(.)', 'A']))}, "
                  f"{gen.value(_REPLACEMENTS)}{gen.pick(['', ', ' + repr('g'), ', ' + repr('gi')])})",
                  STR, base.tags),
        lambda: E(f"regexp_extract({b}, {gen.value(repr_list(['([a-z])([a-z])', '[0-9]+', '(x)?']))}"
                  f"{gen.pick(['', ', 1'])})", STR, base.tags),
        lambda: E(f"md5({b})", STR, base.tags),
        lambda: E(f"strlen({b})", BIG, base.tags),
        lambda: E(f"{b}[{n}:{gen.value([-1, 2, 4])}]", STR, base.tags),
        lambda: E(f"CASE WHEN {b} LIKE {gen.value(repr_list(['a!%%', '%!_%', '_!!%']))} ESCAPE '!' THEN 1 "
                  "ELSE 0 END", INT, base.tags),
    ]
    return gen.pick(forms)()


def repr_list(values: list[str]) -> list[str]:
    """SQL string literals of ``values``."""
    return ["'" + v.replace("'", "''") + "'" for v in values]


def _temporal(gen: FuzzGen, base: E) -> E | None:
    b = base.sql
    date = base.kind == DATE
    form = gen.r.randrange(6)
    if form == 0:
        return E(f"strftime({b}, {gen.pick(_FORMATS)})", STR, base.tags)
    if form == 1:
        part = gen.pick(_DATE_DIFF_PARTS if date else _TS_DIFF_PARTS)
        other = gen.value(["DATE '2024-02-29'", "DATE '1999-12-31'"] if date else
                          ["TIMESTAMP '2024-03-10 02:30:00'", "TIMESTAMP '1999-12-31 23:59:59.999'"])
        return E(f"{gen.pick(['date_diff', 'date_sub'])}('{part}', {b}, {other})", BIG, base.tags)
    if form == 2:
        return E(f"extract({gen.pick(_DATE_EXTRACT if date else _TS_EXTRACT)} FROM {b})", INT, base.tags)
    if form == 3:
        return E(f"date_trunc('{gen.pick(['week', 'quarter', 'decade', 'century', 'millennium'])}', {b})",
                 TSTAMP, base.tags)
    if form == 4 and date:
        return E(f"last_day({b})", DATE, base.tags)
    if form == 4:
        return E(f"epoch_ms({b})", BIG, base.tags)
    return None


def surface_expr(gen: FuzzGen, scope: Scope, base: E, depth: int) -> E | None:
    """One of the functions above over ``base`` (a column reference), or None."""
    k = base.kind
    if k == STR:
        return _text(gen, base)
    if k in (DATE, TSTAMP):
        return _temporal(gen, base)
    if k in (INT, BIG, DEC, DBL):
        return _num_text(gen, base, k)
    return None


def surface_window_item(gen: FuzzGen, scope: Scope, part: E) -> E | None:
    """A window function over a whole partition whose value does not depend on row order."""
    x = gen.expr(scope, (INT, DEC, DBL, STR, DATE))
    if x is None:
        return None
    over = f"OVER (PARTITION BY {part.sql})"
    form = gen.r.randrange(3)
    if form == 0:
        cond = f"{x.sql} IS NOT NULL" if x.kind in (STR, DATE) else f"{x.sql} > 0"
        return E(f"CASE WHEN {gen.pick(['bool_and', 'bool_or'])}({cond}) {over} THEN 1 ELSE 0 END", INT, x.tags)
    if form == 1:
        return E(f"count(DISTINCT {x.sql}) {over}", INT, x.tags)
    if x.kind in (STR,) or "big" in x.tags:
        return E(f"count({x.sql}) {over}", INT, x.tags)
    fn = gen.pick(["median", "quantile_cont|0.25", "quantile_disc|0.75"])
    call = f"{fn.split('|')[0]}({x.sql}{', ' + fn.split('|')[1] if '|' in fn else ''})"
    kind = x.kind if fn.startswith("quantile_disc") else DBL if x.kind != DATE else TSTAMP
    return E(f"{call} {over}", kind, x.tags | {"avg"})
