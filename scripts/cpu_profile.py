"""Where a CPU query's worker threads spend their time: a sampling profile of thread states.

Usage: python scripts/cpu_profile.py DB SUITE THREADS [QUERY ...]

Each query runs once to warm up, then three times while a sampler thread looks at every hetdb worker
thread (and the main thread) every 0.5 ms (the switch interval is lowered to that, so a thread
running Python lets the sampler in). A sample names the innermost hetdb frame of a thread and where
the thread is below it: ``call`` when that frame is the thread's top frame (a call into compiled code
from it: a Numba kernel, a NumPy loop -- or its own bytecode), else the library module running Python
(numpy wrappers, threading waits). Python lines of hetdb that show up much at THREADS=1 are the
GIL-held work of a morsel, what cannot scale over cores. Prints wall, process CPU time, busy cores
and the top frames per query.
"""

from __future__ import annotations

import collections
import re
import resource
import sys
import threading
import time

import hetdb
from hetdb.bench.suites import load_queries

_INTERVAL = 0.0005
_TOP = 12


_IDLE = ("threading", "concurrent/futures/thread", "queue")


def _module(filename: str) -> str:
    for marker in ("/hetdb/", "/site-packages/"):
        if marker in filename:
            return filename.split(marker, 1)[1].removesuffix(".py")
    return re.sub(r"^.*/lib/python3\.\d+/", "", filename).removesuffix(".py")


def _frame_key(frame) -> tuple[str, str]:
    """(innermost hetdb frame as module:function:line, where the thread is below it)."""
    top = frame
    if _module(top.f_code.co_filename) in _IDLE:
        return "(idle: waiting for a morsel or for workers)", "wait"
    while frame is not None:
        code = frame.f_code
        if "/hetdb/" in code.co_filename:
            where = "call" if top is frame else _module(top.f_code.co_filename)
            return f"{_module(code.co_filename)}:{code.co_name}:{frame.f_lineno}", where
        frame = frame.f_back
    return "(outside hetdb)", _module(top.f_code.co_filename)


def _sampler(stop: threading.Event, counts: collections.Counter, watched: set[int]) -> None:
    while not stop.is_set():
        frames = sys._current_frames()
        for tid, frame in frames.items():
            if tid in watched or threading._active.get(tid) is not None and \
                    threading._active[tid].name.startswith("hetdb-worker"):
                counts[_frame_key(frame)] += 1
        time.sleep(_INTERVAL)


def main() -> None:
    db, suite, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    names = set(sys.argv[4:])
    queries = [q for q in load_queries(suite, None) if not names or q.name in names]
    con = hetdb.connect(db, device="cpu", threads=threads)
    sys.setswitchinterval(_INTERVAL)  # a thread holding the GIL lets the sampler in this often
    for q in queries:
        con.sql(q.sql).arrow()
        counts: collections.Counter = collections.Counter()
        stop = threading.Event()
        sampler = threading.Thread(target=_sampler, args=(stop, counts, {threading.main_thread().ident}))
        sampler.start()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(3):
            con.sql(q.sql).arrow()
        wall, cpu = (time.perf_counter() - w0) / 3, (time.process_time() - c0) / 3
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        stop.set()
        sampler.join()
        total = sum(counts.values()) or 1
        print(f"{q.name}: threads={threads} wall {wall * 1e3:.1f} ms cpu {cpu * 1e3:.1f} ms "
              f"busy cores {cpu / wall:.2f} (system {(r1.ru_stime - r0.ru_stime) / 3 * 1e3:.1f} ms, "
              f"minor faults {(r1.ru_minflt - r0.ru_minflt) // 3}, context switches voluntary "
              f"{(r1.ru_nvcsw - r0.ru_nvcsw) // 3} involuntary {(r1.ru_nivcsw - r0.ru_nivcsw) // 3}); "
              f"samples {total}")
        for (key, where), n in counts.most_common(_TOP):
            print(f"  {100 * n / total:5.1f}%  {key}  [{where}]")
    con.close()


if __name__ == "__main__":
    main()
