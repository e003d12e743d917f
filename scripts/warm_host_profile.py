"""Where a warm query's host time goes: a sampling profile of every thread's Python stack.

    PYTHONPATH=src python scripts/warm_host_profile.py DB [--suite ssb] [--queries q3.1,q2.1]
        [--runs 5] [--every-us 200] [--top 40] [--set NAME=VALUE ...]

Per query: one untimed warm run (loads the pinned host tier, compiles), then ``--runs`` warm runs (a
fresh ``device="gpu"`` connection each, as ``hetdb bench --mode warm``) while a sampler thread reads
every thread's stack each ``--every-us`` microseconds (``sys._current_frames``; it takes the
interpreter lock: the switch interval is set to a quarter of the period while sampling, so a thread
holding the lock gives it up in time). A thread blocked in
a C call that released the lock (a stream synchronization, a lock wait) is sampled where it waits:
the profile is of wall time, not of CPU time. Printed per query and thread: the samples inside the
timed runs, the functions on the stack in the most samples (cumulative: the function or what it
called), the leaf functions (self), and the stacks' first frames under ``hetdb`` (where in the engine).
The query's wall ms are printed beside (runs under the sampler are a little slower than without it).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scripts_common import parse_options  # noqa: E402

import hetdb  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src") + os.sep


def _where(code) -> str:
    f = code.co_filename
    if f.startswith(SRC):
        f = f[len(SRC):]
    else:
        parts = f.split(os.sep)
        f = os.sep.join(parts[-2:])
    return f"{f}:{code.co_name}"


class Sampler:
    def __init__(self, every_s: float) -> None:
        self.every = every_s
        self.on = False
        self.stop = False
        # (seconds since the previous sample: its weight, thread name, stack outermost first)
        self.samples: list[tuple[float, str, tuple]] = []
        self.me = None
        self.t = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self.t.start()

    def _loop(self) -> None:
        self.me = threading.get_ident()
        names = {}
        last = None
        while not self.stop:
            time.sleep(self.every)
            if not self.on:
                last = None
                continue
            now = time.perf_counter()
            dt, last = (self.every if last is None else now - last), now
            frames = sys._current_frames()
            if len(names) != threading.active_count():
                names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in frames.items():
                if ident == self.me:
                    continue
                stack = []
                f = frame
                while f is not None:
                    stack.append((_where(f.f_code), f.f_lineno))
                    f = f.f_back
                stack.reverse()
                name = names.get(ident, str(ident))
                if stack and stack[-1][0].endswith(("threading.py:wait", "queue.py:get", "thread.py:_worker",
                                                    "threading.py:_wait_for_tstate_lock")):
                    if "MainThread" not in name:
                        continue  # (an idle pool thread)
                self.samples.append((dt, name, tuple(stack)))


def report(samples: list, runs_ms: list[float], top: int, every_s: float) -> None:
    by_thread = collections.defaultdict(list)
    for dt, name, stack in samples:
        base = name.split("-")[0].split("_")[0]
        by_thread[base].append((dt * 1e3, stack))
    print(f"  runs ms: {', '.join(f'{r:.1f}' for r in runs_ms)}; samples every {every_s * 1e6:.0f} us")
    for name, stacks in sorted(by_thread.items(), key=lambda kv: -len(kv[1])):
        n = len(stacks)
        per = max(1, len(runs_ms))
        print(f"  thread {name}: {n} samples (~{sum(w for w, _ in stacks) / per:.1f} ms a run)")
        cum, leaf, line = collections.Counter(), collections.Counter(), collections.Counter()
        for w, st in stacks:
            seen = set()
            for fn, _ln in st:
                if fn not in seen:
                    cum[fn] += w
                    seen.add(fn)
            leaf[st[-1][0]] += w
            eng = [s for s in st if s[0].startswith("hetdb")]
            if eng:
                line[f"{eng[-1][0]}:{eng[-1][1]}"] += w
        print("    cumulative (ms a run):")
        for fn, c in cum.most_common(top):
            print(f"      {c / per:7.2f}  {fn}")
        print("    self (ms a run):")
        for fn, c in leaf.most_common(top // 2):
            print(f"      {c / per:7.2f}  {fn}")
        print("    innermost engine line (ms a run):")
        for fn, c in line.most_common(top // 2):
            print(f"      {c / per:7.2f}  {fn}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q3.1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--every-us", type=float, default=200.0)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--set", dest="settings", action="append", default=[])
    ap.add_argument("--hot", action="store_true", help="hot runs on one connection instead of warm ones")
    args = ap.parse_args()
    opts = parse_options(args.settings)
    sampler = Sampler(args.every_us / 1e6)
    for q in load_queries(args.suite, args.queries.split(",")):
        con = hetdb.connect(args.db, device="gpu", create=False, **opts)
        con.sql(q.sql).arrow()
        if not args.hot:
            con.close()
        # one more untimed run: the first run of a fresh connection after the loading one is slower
        con = con if args.hot else hetdb.connect(args.db, device="gpu", create=False, **opts)
        con.sql(q.sql).arrow()
        runs = []
        sampler.samples = []
        for _ in range(args.runs):
            if not args.hot:
                con.close()
                con = hetdb.connect(args.db, device="gpu", create=False, **opts)
            old = sys.getswitchinterval()
            sys.setswitchinterval(args.every_us / 4e6)  # (the sampler gets the lock within a quarter period)
            sampler.on = True
            t0 = time.perf_counter()
            con.sql(q.sql).arrow()
            runs.append((time.perf_counter() - t0) * 1e3)
            sampler.on = False
            sys.setswitchinterval(old)
        con.close()
        print(f"{q.name} {'hot' if args.hot else 'warm'}:")
        report(sampler.samples, runs, args.top, args.every_us / 1e6)
    sampler.stop = True


if __name__ == "__main__":
    main()
