"""A progress line on standard error for statements running longer than a second: the stage
(planning, compiling a kernel, scanning a table, pipeline i of n), rows and pages read, elapsed time."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

from hetdb import compiling

DELAY_S = 1.0


@contextlib.contextmanager
def progress_line(enabled: bool = True, stream=None, status: Callable[[], str] | None = None,
                  terminal_only: bool = True) -> Iterator[None]:
    """While the block runs, after DELAY_S seconds, keep one line on ``stream`` (stderr) saying how
    long it has been running and ``status()`` (stage, rows, pages); the line is erased when the block
    ends. With ``terminal_only`` only on a terminal; otherwise (a notebook's stderr) the line is
    rewritten with carriage returns instead of terminal escapes."""
    stream = stream or sys.stderr
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if not enabled or (terminal_only and not tty):
        yield
        return
    done = threading.Event()
    t0 = time.perf_counter()
    width = [0]

    def show(text: str) -> None:
        if tty:
            stream.write(f"\r\x1b[2K{text}")
        else:
            stream.write("\r" + text.ljust(width[0]))
        width[0] = max(width[0], len(text))
        stream.flush()

    def tick() -> None:
        if done.wait(DELAY_S):
            return
        while not done.is_set():
            try:
                what = status() if status is not None else "running"
            except Exception:  # noqa: BLE001 - a status read racing the query's end: show it plainly
                what = "running"
            show(f"{what} … {time.perf_counter() - t0:5.1f} s (Ctrl-C cancels)")
            done.wait(0.2)

    th = threading.Thread(target=tick, daemon=True, name="hetdb-progress")
    th.start()
    try:
        yield
    finally:
        done.set()
        th.join()
        if width[0]:
            stream.write("\r\x1b[2K" if tty else "\r" + " " * width[0] + "\r")
            stream.flush()


def engine_status(con) -> Callable[[], str]:
    """A status function for ``progress_line``: the connection's current stage (planning, compiling
    a Numba or CUDA kernel, scanning a table), pipeline, and rows and pages its scans read so far."""
    compiling.watch_numba()

    def status() -> str:
        engine = getattr(con, "_engine", None)
        live = dict(getattr(engine, "live", None) or {})
        kernel = compiling.current()
        if not live:
            return f"compiling {kernel}" if kernel else "running"
        if live.get("stage") != "running":
            stage = str(live.get("stage"))
            return f"{stage}, compiling {kernel}" if kernel else stage
        text = f"pipeline {live['pipeline']}/{live['pipelines']}"
        source = live.get("source")
        scan = getattr(source, "scan", None)
        if scan is not None:
            text = f"scanning {scan.table}, {text}"
        if kernel:
            text = f"compiling {kernel}, {text}"
        ctx = live.get("ctx")
        if ctx is not None:
            stats = list(ctx.stats.values())
            rows = sum(s.rows_in for s in stats if s.pages_read or s.row_groups_read)
            pages = sum(s.pages_read for s in stats)
            text += f", {rows:,} rows / {pages:,} pages read"
            fused = [s.fused for s in stats if s.fused]
            if ctx.device is not None and not fused and not kernel:
                text += " (GPU: compiling or running)"
        return text

    return status
