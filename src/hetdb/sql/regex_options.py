"""DuckDB's regular-expression options (the last argument of regexp_matches, regexp_full_match,
regexp_replace, regexp_extract, regexp_extract_all) as Python inline flags on a constant pattern:
'i' case-insensitive, 'c' case-sensitive (the default), 's' '.' matches a newline, 'm'/'n'/'p'
newline-sensitive (the default), 'l' the pattern is literal text, 'g' (regexp_replace only) every match.
An option hetdb does not know is refused by name, never ignored."""

from __future__ import annotations

import re

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import Expr, Literal

_KNOWN = set("icsmnpl")


def apply_options(pattern: Expr, options: Expr | None, fname: str, allow_global: bool = False) -> tuple[Expr, bool]:
    """``pattern`` with ``options`` applied, and whether 'g' (replace every match) was given."""
    if options is None:
        return pattern, False
    if not (isinstance(options, Literal) and isinstance(options.value, str)):
        raise UnsupportedError(f"{fname} options that are not a constant string")
    flags = options.value
    unknown = sorted(set(flags) - _KNOWN - ({"g"} if allow_global else set()))
    if unknown:
        raise UnsupportedError(f"{fname} option(s) '{''.join(unknown)}' (supported: i, c, s, m, n, p, l"
                               + (", g)" if allow_global else ")"))
    every = "g" in flags
    if not set(flags) - {"g", "c", "m", "n", "p"}:
        return pattern, every
    if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
        raise UnsupportedError(f"{fname} with options '{flags}' and a pattern that is not a constant string")
    text = re.escape(pattern.value) if "l" in flags else pattern.value
    # the last of 'i' and 'c' wins, as in DuckDB
    case = [f for f in flags if f in "ic"]
    inline = ("i" if case and case[-1] == "i" else "") + ("s" if "s" in flags else "")
    return Literal(T.STRING, f"(?{inline}){text}" if inline else text), every
