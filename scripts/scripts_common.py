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
