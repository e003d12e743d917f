"""`make fuzz`: the long seeded fuzz campaign (random queries vs DuckDB + TLP/NoREC) under every configuration.

    python tests/differential/fuzz_main.py [--dir build/fuzz] [--queries 100000] [--seed N]
        [--device cpu|gpu|all] [--jobs J] [--gpu-jobs K] [--seconds S] [--cases A:B] [--shard I/N]
        [--config NAME ...] [--values configuration|device]
    python tests/differential/fuzz_main.py --seed N --case I [--device D] [--config NAME ...] [--values V]   (replay)
    python tests/differential/fuzz_main.py --dir D --summary [--merge RESULTS.jsonl ...]

(environment defaults: FUZZ_DIR, FUZZ_QUERIES, FUZZ_SEED, FUZZ_DEVICE, FUZZ_JOBS, FUZZ_SECONDS, FUZZ_CASES,
FUZZ_SHARD, FUZZ_VALUES; HETDB_FUZZ_ALLOW/DENY as in the tests)

A campaign (``fuzz_campaign``) runs cases 0 .. queries-1, each under every configuration of its device
(``diff_fuzzconfig``: 8 on the CPU; on the GPU those 8 and two of its own), so each configuration
answers ``--queries`` cases. ``--device all`` runs the CPU's and, where CuPy sees a GPU, the GPU's.
Tasks of TASK_CASES cases run in ``--jobs`` processes (at most ``--gpu-jobs`` of them on the GPU), each
process keeping its databases and connections for WORKER_CASES cases (``fuzz_worker``); a GPU campaign
first fills the kernel cache with hetdb's .cu modules in parallel (``warm_kernel_cache``). The directory
records every finished task, so running the same command again resumes; ``--seconds`` stops the run
cleanly (no new task, running ones stop between cases); ``--cases A:B`` and ``--shard I/N`` take a part
of the campaign (several machines or runs share one campaign, each case once). Every mismatch or
crash goes to ``failures.txt`` with its replay command; ``summary.txt`` counts cases and answers checked
per configuration, with the NVRTC and Numba compiles and the harness builds that took the workers'
time. ``--values device`` (a new campaign's choice, kept in campaign.json): every configuration of a
device draws the same values for a case (default ``configuration``: each its own; the GPU compiles
literals into its kernels, so there each configuration's own values cost it the case's compiles).
Exits 1 when a failure was found.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_fuzzconfig import configurations_of  # noqa: E402
from diff_fuzzgen import KNOWN_ISSUES, allowed_from_env  # noqa: E402
from fuzz_campaign import TASK_CASES, WORKER_CASES, Campaign, plan_tasks  # noqa: E402
from fuzz_worker import VALUES, Config, Harness, configurations, run_task  # noqa: E402

HERE = Path(__file__).resolve()


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: I must be in 0..N-1")
    return i, n


def parse_cases(text: str) -> tuple[int, int | None]:
    """``"A:B"`` -> (A, B); ``"A:"`` -> (A, None) (to the campaign's end)."""
    try:
        a, b = text.split(":")
        return int(a or 0), (int(b) if b else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--cases {text!r}: expected A:B, e.g. 0:50000") from None


def gpu_visible() -> bool:
    try:
        from hetdb.backend.gpu.device import gpu_available
    except ImportError:
        return False
    return bool(gpu_available())


def devices_of(device: str) -> list[str]:
    if device == "all":
        return ["cpu", "gpu"] if gpu_visible() else ["cpu"]
    if device not in ("cpu", "gpu"):
        raise SystemExit(f"fuzz: --device {device!r}: expected cpu, gpu or all")
    return [device]


def warm_kernel_cache(jobs: int) -> None:
    """Fill the GPU kernel cache with hetdb's .cu modules before the workers start, one module per
    process (compile.warm_static_module): workers starting together on a fresh machine would each
    compile every module they need (16 processes compiling the same ~9 modules one after another);
    warmed, they load them from disk. Printed: each module's seconds and whether it compiled."""
    from hetdb.backend.gpu.compile import static_modules, warm_static_module

    t0 = time.time()
    count = len(static_modules())
    try:
        with ProcessPoolExecutor(max_workers=max(1, min(jobs, count)), mp_context=get_context("spawn")) as pool:
            done = list(pool.map(warm_static_module, range(count)))
    except Exception as e:  # the workers compile what they need themselves
        print(f"fuzz: warming the gpu kernel cache failed ({type(e).__name__}: {e}); the workers compile", flush=True)
        return
    print(f"fuzz: gpu kernel cache warmed in {time.time() - t0:.1f} s: "
          + ", ".join(f"{name} {secs:.1f} s ({how})" for name, secs, how in done), flush=True)


def replay(seed: int, case: int, devices: list[str], names: list[str] | None,
           values: str = "configuration") -> int:
    """Run one case under the chosen configurations in this process; print every failure in full."""
    failures = 0
    for device in devices:
        configs = configurations(device, names, values)
        result = Harness(configs).run(seed, case, 1)
        for label, s in result["stats"].items():
            print(f"fuzz: [{label}] case {case}: {s['cases']} case, {s['differential']} vs DuckDB, "
                  f"{s['oracle_queries']} oracle statements, {s['failures']} failures", flush=True)
        for fail in result["failures"]:
            print(fail["text"] + "\n", flush=True)
        failures += len(result["failures"])
    return 1 if failures else 0


class Scheduler:
    """Tasks of several devices over one process pool: at most ``gpu_jobs`` GPU tasks at a time; a
    pool broken by a dying worker is made again (its tasks once more, then recorded as crashes)."""

    def __init__(self, campaign: Campaign, configs: dict[str, tuple[Config, ...]], tasks: dict[str, list],
                 jobs: int, gpu_jobs: int, deadline: float | None, task=run_task):
        self.campaign, self.configs, self.jobs, self.gpu_jobs = campaign, configs, jobs, gpu_jobs
        self.task = task
        self.queues = {d: deque((start, count, 0) for start, count in t) for d, t in tasks.items()}
        self.deadline = deadline
        self.failures = 0
        self.harness_errors: dict[str, int] = {}
        self.script = f"python {HERE.relative_to(Path.cwd()) if HERE.is_relative_to(Path.cwd()) else HERE}"
        self.replay = (f"{self.script} --seed {campaign.seed} --case {{case}} --device {{device}} --config '{{config}}'"
                       + (f" --values {campaign.values}" if campaign.values != "configuration" else ""))

    def _pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("spawn"),
                                   max_tasks_per_child=max(1, WORKER_CASES // TASK_CASES))

    def _next(self, running: dict) -> tuple[str, tuple] | None:
        on_gpu = sum(1 for d, _ in running.values() if d == "gpu")
        for device in sorted(self.queues, key=lambda d: d != "gpu"):  # GPU tasks first, up to gpu_jobs
            if self.queues[device] and (device != "gpu" or on_gpu < self.gpu_jobs):
                return device, self.queues[device].popleft()
        return None

    def run(self) -> None:
        pool, running = self._pool(), {}
        try:
            while True:
                while len(running) < self.jobs and not self._late():
                    picked = self._next(running)
                    if picked is None:
                        break
                    device, (start, count, tries) = picked
                    future = pool.submit(self.task, self.configs[device], self.campaign.seed, start, count,
                                         self.deadline)
                    running[future] = (device, (start, count, tries))
                if not running:
                    return
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for future in finished:
                    device, task = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken = True
                        self._crashed(device, task)
                    except Exception as e:  # the task's harness failed (e.g. a connection refused)
                        self._harness_error(device, task, e)
                    else:
                        self._done(result)
                if broken:
                    for device, task in running.values():
                        self._crashed(device, task)
                    running.clear()
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = self._pool()
        finally:  # also on SIGTERM (a `timeout`): no worker outlives the run
            workers = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in workers:
                if process.is_alive():
                    process.terminate()

    def _late(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline - 5

    def _done(self, result: dict) -> None:
        self.campaign.record(result, self.replay)
        self.failures += len(result["failures"])
        done = sum(b - a for a, b in self.campaign.done(result["device"]))
        if result["done"]:
            print(f"fuzz: {result['device']} cases {result['start']}..{result['start'] + result['done'] - 1} under "
                  f"{len(result['stats'])} configurations in {result['seconds']:.0f} s (pid {result['pid']}), "
                  f"{len(result['failures'])} failures; {done} cases done", flush=True)
        else:
            print(f"fuzz: {result['device']} task at case {result['start']} did not finish; {done} cases done",
                  flush=True)
        for fail in result["failures"]:
            print(f"fuzz: FAILED {fail['text'].splitlines()[0]}", flush=True)

    def _harness_error(self, device: str, task: tuple, e: Exception) -> None:
        start, count, _ = task
        tb = "".join(traceback.format_exception(e)[-8:])
        text = f"--- {device} seed={self.campaign.seed} cases {start}..{start + count - 1}: harness error\n{tb}"
        self.harness_errors[device] = self.harness_errors.get(device, 0) + 1
        if self.harness_errors[device] >= 3:  # it fails on every task: stop the device's tasks
            print(f"fuzz: {device}: three tasks failed in the harness; no more {device} tasks", flush=True)
            self.queues[device].clear()
        self._failed(device, start, text)

    def _crashed(self, device: str, task: tuple) -> None:
        start, count, tries = task
        if tries == 0:  # maybe only a neighbour of the task that killed the process: once more
            self.queues[device].appendleft((start, count, 1))
            return
        text = (f"--- {device} seed={self.campaign.seed} cases {start}..{start + count - 1}: a worker process "
                f"died (a crash, or killed for memory) while running them twice; replay: {self.script} "
                f"--dir /tmp/fuzz-replay --seed {self.campaign.seed} --queries {self.campaign.queries} "
                f"--cases {start}:{start + count} --device {device}")
        self._failed(device, start, text)

    def _failed(self, device: str, start: int, text: str) -> None:
        """A task that did not finish: recorded with no case done (it runs again when resumed)."""
        self._done({"device": device, "seed": self.campaign.seed, "start": start, "done": 0, "seconds": 0.0,
                    "pid": 0, "stats": {}, "failures": [{"config": "*", "device": device, "case": start, "text": text}]})


def _stop(signum, frame) -> None:
    raise SystemExit(f"fuzz: stopped by signal {signum}; the tasks finished so far are recorded")


def main(argv: list[str] | None = None) -> int:
    env = os.environ.get
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=env("FUZZ_DIR", "build/fuzz"), help="the campaign's directory (resumed)")
    ap.add_argument("--queries", type=int, default=int(env("FUZZ_QUERIES")) if env("FUZZ_QUERIES") else None,
                    help="cases per configuration (a new campaign: 100000)")
    ap.add_argument("--seed", type=int, default=int(env("FUZZ_SEED")) if env("FUZZ_SEED") else None)
    ap.add_argument("--device", default=env("FUZZ_DEVICE", "cpu"), help="cpu | gpu | all (gpu where visible)")
    ap.add_argument("--jobs", type=int, default=int(env("FUZZ_JOBS", "1")), help="processes")
    ap.add_argument("--gpu-jobs", type=int, default=None, help="at most this many on the GPU (jobs // 4)")
    ap.add_argument("--seconds", type=float, default=float(env("FUZZ_SECONDS", "0")) or None,
                    help="stop after this many seconds (cleanly: the cases done are recorded)")
    ap.add_argument("--cases", type=parse_cases, default=parse_cases(env("FUZZ_CASES", "0:")),
                    help="A:B: only cases A..B-1 of the campaign")
    ap.add_argument("--shard", type=parse_shard, default=parse_shard(env("FUZZ_SHARD", "0/1")),
                    help="I/N: only blocks I, I+N, ... of TASK_CASES cases")
    ap.add_argument("--config", action="append", help="only these configurations (by name)")
    ap.add_argument("--case", type=int, default=None, help="replay one case (needs --seed)")
    ap.add_argument("--summary", action="store_true", help="print the campaign's summary and exit")
    ap.add_argument("--merge", nargs="+", default=[], help="with --summary: results.jsonl files of other "
                    "runs of the same campaign (other machines' case ranges) counted in")
    ap.add_argument("--values", choices=VALUES, default=env("FUZZ_VALUES"),
                    help="whose values a case draws: each configuration its own (a new campaign's default) or "
                    "one set per device")
    args = ap.parse_args(argv)
    devices = devices_of(args.device)
    known = {n for d in ("cpu", "gpu") for n, _ in configurations_of(d)}
    if args.config and set(args.config) - known:
        ap.error(f"no configuration {sorted(set(args.config) - known)}; known: {sorted(known)}")
    if args.case is not None:
        if args.seed is None:
            ap.error("--case needs --seed")
        return replay(args.seed, args.case, devices, args.config, args.values or "configuration")
    if args.summary:
        campaign = Campaign.open(args.dir, None, None)
        for path in args.merge:
            campaign.add_results(Path(path))
        print(campaign.summary())
        return 0
    fresh = not (Path(args.dir) / "campaign.json").exists()
    seed = args.seed if args.seed is not None or not fresh else time.time_ns() % 10**9
    campaign = Campaign.open(args.dir, seed, args.queries if args.queries or not fresh else 100_000, args.values)
    last = campaign.queries if args.cases[1] is None else min(campaign.queries, args.cases[1])
    first = args.cases[0]
    configs = {d: tuple(configurations(d, args.config, campaign.values)) for d in devices}
    configs = {d: c for d, c in configs.items() if c}
    tasks = {d: plan_tasks(first, last, args.shard, campaign.done(d)) for d in configs}
    jobs = max(1, args.jobs)
    gpu_jobs = args.gpu_jobs if args.gpu_jobs is not None else max(1, jobs // 4)
    deadline = time.time() + args.seconds if args.seconds else None
    print(f"fuzz: campaign {campaign.path} seed={campaign.seed} cases {first}..{last - 1} of {campaign.queries} "
          f"shard={args.shard[0]}/{args.shard[1]} jobs={jobs} (gpu {gpu_jobs}) "
          f"seconds={args.seconds or 'unlimited'} values={campaign.values}", flush=True)
    for d, cs in configs.items():
        left = sum(c for _, c in tasks[d])
        print(f"fuzz: {d}: {len(cs)} configurations {[c.name for c in cs]}; {left} cases left in "
              f"{len(tasks[d])} tasks", flush=True)
    if args.device == "all" and "gpu" not in devices:
        print("fuzz: no GPU visible to CuPy: the GPU configurations are left out", flush=True)
    print(f"fuzz: known issues left out: {sorted(set(KNOWN_ISSUES) - allowed_from_env())}", flush=True)
    signal.signal(signal.SIGTERM, _stop)
    t0 = time.time()
    if "gpu" in configs and any(c for _, c in tasks["gpu"]):
        warm_kernel_cache(jobs)
    scheduler = Scheduler(campaign, configs, tasks, jobs, gpu_jobs, deadline)
    try:
        scheduler.run()
    finally:  # stopped or not: what this run did and where the campaign stands
        print(f"fuzz: this run: {time.time() - t0:.0f} s, {scheduler.failures} failures", flush=True)
        print(campaign.summary(), flush=True)
    return 1 if scheduler.failures else 0


if __name__ == "__main__":
    sys.exit(main())
