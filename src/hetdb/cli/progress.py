"""A progress line on standard error for statements running longer than a second."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

DELAY_S = 1.0


@contextlib.contextmanager
def progress_line(enabled: bool = True, stream=None) -> Iterator[None]:
    """While the block runs, after DELAY_S seconds, keep one line on ``stream`` (stderr) saying how
    long it has been running; the line is erased when the block ends. Only on a terminal."""
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
            stream.write(f"\r\x1b[2Krunning … {time.perf_counter() - t0:5.1f} s (Ctrl-C cancels)")
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
