"""A progress line on standard error for statements running longer than a second."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

DELAY_S = 1.0


@contextlib.contextmanager
def progress_line(enabled: bool = True, stream=None, status: Callable[[], str] | None = None) -> Iterator[None]:
    """While the block runs, after DELAY_S seconds, keep one line on ``stream`` (stderr) saying how
    long it has been running and ``status()`` (stage, rows, pages); the line is erased when the block
    ends. Only on a terminal."""
    stream = stream or sys.stderr
    if not enabled or not stream.isatty():
        yield
        return
    done = threading.Event()
    t0 = time.perf_counter()
    shown = [False]

    def tick() -> None:
        if done.wait(DELAY_S):
            return
        while not done.is_set():
            what = status() if status is not None else "running"
            stream.write(f"\r\x1b[2K{what} … {time.perf_counter() - t0:5.1f} s (Ctrl-C cancels)")
            stream.flush()
            shown[0] = True
            done.wait(0.2)

    th = threading.Thread(target=tick, daemon=True, name="hetdb-progress")
    th.start()
    try:
        yield
    finally:
        done.set()
        th.join()
        if shown[0]:
            stream.write("\r\x1b[2K")
            stream.flush()


def engine_status(con) -> Callable[[], str]:
    """A status function for ``progress_line``: the connection's current stage, pipeline, and rows
    and pages its scans have read so far."""

    def status() -> str:
        engine = getattr(con, "_engine", None)
        live = dict(getattr(engine, "live", None) or {})
        if not live:
            return "running"
        if live.get("stage") != "running":
            return str(live.get("stage"))
        text = f"pipeline {live['pipeline']}/{live['pipelines']}"
        ctx = live.get("ctx")
        if ctx is not None:
            stats = list(ctx.stats.values())
            rows = sum(s.rows_in for s in stats if s.pages_read or s.row_groups_read)
            pages = sum(s.pages_read for s in stats)
            text += f", {rows:,} rows / {pages:,} pages read"
            fused = [s.fused for s in stats if s.fused]
            if ctx.device is not None and not fused:
                text += " (GPU: compiling or running)"
        return text

    return status
