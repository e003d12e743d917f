"""Small helpers shared by the measurement scripts in this folder."""

from __future__ import annotations

import os


def dir_bytes(path: str) -> int:
    """Bytes of every file under ``path`` (a database's size on disk)."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def parse_options(pairs: list[str]) -> dict:
    """``name=value`` connection options; values that read as int/bool/None become those."""
    out: dict = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        low = value.lower()
        if low in ("true", "false"):
            out[name] = low == "true"
        elif low == "none":
            out[name] = None
        else:
            try:
                out[name] = int(value)
            except ValueError:
                out[name] = value
    return out


def add_suite_arguments(ap) -> None:
    """The arguments the GPU-budget scripts share: database, suite, queries, the GPU memory limit as a
    share of the database's size, repetitions."""
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q2.1,q3.1,q4.1")
    ap.add_argument("--limit-fraction", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)
