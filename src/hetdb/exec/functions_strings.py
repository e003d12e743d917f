"""Host implementations of sql/functions_strings.py's functions, row by row in Python (once per
distinct value where the other arguments are constants), with DuckDB's results."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pyarrow as pa

from hetdb.exec.functions_host import python_function


def _translate(s: str, frm: str, to: str) -> str:
    table: dict[int, int | None] = {}
    for i, ch in enumerate(frm):
        table.setdefault(ord(ch), ord(to[i]) if i < len(to) else None)
    return s.translate(table)


def _levenshtein(a: str, b: str) -> int:
    """Edits between the characters (code points) of ``a`` and ``b``, as DuckDB 2.0.1 counts them
    (2.0.0 counted UTF-8 bytes: 'é' to 'e' was 2)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _damerau_levenshtein(a: str, b: str) -> int:
    """The unrestricted Damerau-Levenshtein distance (adjacent transpositions, substrings edited more
    than once: Lowrance-Wagner) between characters (code points), as DuckDB 2.0.1 computes it."""
    inf = len(a) + len(b)
    last: dict[int, int] = {}
    d = [[inf] * (len(b) + 2) for _ in range(len(a) + 2)]
    for i in range(len(a) + 1):
        d[i + 1][1] = i
        d[i + 1][0] = inf
    for j in range(len(b) + 1):
        d[1][j + 1] = j
        d[0][j + 1] = inf
    for i in range(1, len(a) + 1):
        db = 0
        for j in range(1, len(b) + 1):
            i1, j1 = last.get(b[j - 1], 0), db
            cost = 0 if a[i - 1] == b[j - 1] else 1
            if cost == 0:
                db = j
            d[i + 1][j + 1] = min(d[i][j] + cost, d[i + 1][j] + 1, d[i][j + 1] + 1,
                                  d[i1][j1] + (i - i1 - 1) + 1 + (j - j1 - 1))
        last[a[i - 1]] = i
    return d[len(a) + 1][len(b) + 1]


def _regexp_escape(s: str) -> str:
    """RE2's QuoteMeta: every ASCII character but letters, digits and '_' escaped, NUL as \\x00."""
    out = []
    for ch in s:
        if ch == "\0":
            out.append("\\x00")
        elif ord(ch) < 128 and not (ch.isalnum() or ch == "_"):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _pole(x: float) -> bool:
    """Zero or a negative integer: where gamma has its poles."""
    return x == 0.0 or (x < 0 and math.isfinite(x) and x == math.floor(x))


def _gamma(x: float) -> float:
    """C's tgamma, as DuckDB returns it: +-inf at zero, NaN at the negative integers and -inf."""
    if x != x or x == -math.inf or (x < 0 and _pole(x)):
        return math.nan
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x == math.inf:
        return math.inf
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf


def _lgamma(x: float) -> float:
    """C's lgamma (log |gamma(x)|): inf at the poles and at +-inf."""
    if x != x:
        return math.nan
    if _pole(x) or math.isinf(x):
        return math.inf
    return math.lgamma(x)


def _round_even(x: float, digits: int) -> float:
    scale = 10.0 ** digits
    return float(np.rint(x * scale) / scale)


FUNCTIONS = {
    "translate": python_function(_translate, pa.string()),
    "levenshtein": python_function(_levenshtein, pa.int64()),
    "damerau_levenshtein": python_function(_damerau_levenshtein, pa.int64()),
    "sha1": python_function(lambda s: hashlib.sha1(s.encode()).hexdigest(), pa.string()),
    "sha256": python_function(lambda s: hashlib.sha256(s.encode()).hexdigest(), pa.string()),
    "hex_int": python_function(lambda v: format(v & 0xFFFFFFFFFFFFFFFF, "X"), pa.string()),
    "bin_int": python_function(lambda v: format(v & 0xFFFFFFFFFFFFFFFF, "b"), pa.string()),
    "hex_text": python_function(lambda s: s.encode().hex().upper(), pa.string()),
    "bin_text": python_function(lambda s: "".join(format(c, "08b") for c in s.encode()), pa.string()),
    "regexp_escape": python_function(_regexp_escape, pa.string()),
    "signbit": python_function(lambda x: math.copysign(1.0, x) < 0, pa.bool_()),
    "gamma": python_function(_gamma, pa.float64()),
    "lgamma": python_function(_lgamma, pa.float64()),
    "nextafter": python_function(math.nextafter, pa.float64()),
    "round_even": python_function(_round_even, pa.float64()),
}

__all__ = ["FUNCTIONS"]
