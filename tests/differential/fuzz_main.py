"""`make fuzz`: a long seeded fuzz campaign over the fuzz tables under every configuration.

    python tests/differential/fuzz_main.py [--queries 100000 (per configuration)] [--seed N] [--device cpu|gpu] [--jobs J]
                                           [--shard I/N] [--config NAME ...] [--case I] [--keep-going]

(environment defaults: FUZZ_QUERIES, FUZZ_SEED, FUZZ_DEVICE, FUZZ_JOBS, FUZZ_SHARD; HETDB_FUZZ_ALLOW/DENY as in the tests)

``--queries`` cases run under each configuration (``FUZZ_CONFIGURATIONS``); configuration i runs case
indices i*queries .. (i+1)*queries-1, so no two configurations draw the same case. Prints the seed,
progress per configuration, and the first failing query (or, with --keep-going, every one); exits 1
on any failure. ``--case I`` replays one case under every chosen configuration. A configuration's
cases run in tasks of ``TASK_CASES``, each in a fresh process (``--jobs`` of them at a time), so
memory stays bounded over 100,000 cases. ``--shard I/N`` runs every N-th of those tasks, starting at
task I (0 <= I < N): N machines (or N invocations) with the same seed, queries and configurations
run the campaign between them, each case once.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_data import load_duckdb  # noqa: E402
from diff_fuzz import FuzzRunner, FuzzStats  # noqa: E402
from diff_fuzzconfig import FUZZ_CONFIGURATIONS, split_options  # noqa: E402
from diff_fuzzdata import build_fuzz  # noqa: E402
from diff_fuzzgen import KNOWN_ISSUES, allowed_from_env, sample_values  # noqa: E402

import hetdb  # noqa: E402

# cases one process runs before it exits: each query shape leaves a compiled CPU loop in the process
# (about 1 MB: 1.4 GB after 4,500 cases), so a long campaign runs in processes of bounded size
TASK_CASES = 2000


def run_configuration(name: str, options: dict, seed: int, start: int, count: int, device: str,
                      keep_going: bool) -> FuzzStats:
    """Cases ``start .. start+count-1`` under one configuration, on a fuzz database of its own."""
    allow = allowed_from_env()
    compression, options = split_options(options)
    with tempfile.TemporaryDirectory(prefix="hetdb-fuzz-") as tmp:
        path = os.path.join(tmp, "fuzz")
        build_fuzz(path, compression)
        duck, _, _ = load_duckdb(path)
        samples = sample_values(duck)
        con = hetdb.connect(path, device=device, **options)
        runner = FuzzRunner(name, lambda sql: con.sql(sql).arrow(), duck, samples, allow)
        stats, t0 = FuzzStats(), time.time()
        for chunk in range(start, start + count, 1000):
            runner.cache.clear()  # DuckDB's answers are not reused across cases here
            part = runner.run(seed, min(1000, start + count - chunk), chunk, stop_at_first=not keep_going)
            stats.add(part)
            for failure in part.failures:
                print(f"fuzz: FAILED {failure.splitlines()[0]}", flush=True)
            if stats.failures and not keep_going:
                break
            print(f"fuzz: [{name}] cases {start}..{min(chunk + 1000, start + count) - 1}, "
                  f"{len(stats.failures)} failures, {time.time() - t0:.0f} s", flush=True)
        con.close()
        stats.seconds = time.time() - t0
        return stats


def campaign_tasks(configs: list[tuple[str, dict]], per: int, seed: int, device: str, keep_going: bool,
                   case: int | None = None, shard: tuple[int, int] = (0, 1)) -> list[tuple]:
    """``run_configuration`` arguments of every task of the campaign (of shard ``shard`` = (I, N))."""
    tasks = []
    for i, (name, options) in enumerate(configs):
        first, count = (case, 1) if case is not None else (i * per, per)
        tasks += [(name, options, seed, start, min(TASK_CASES, first + count - start), device, keep_going)
                  for start in range(first, first + count, TASK_CASES)]
    return tasks[shard[0]::shard[1]]


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: I must be in 0..N-1")
    return i, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=int(os.environ.get("FUZZ_QUERIES", "100000")),
                    help="cases per configuration (each one query compared with DuckDB, some also an oracle)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--device", default=os.environ.get("FUZZ_DEVICE", "cpu"))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FUZZ_JOBS", "1")),
                    help="tasks (of TASK_CASES cases) run in parallel processes")
    ap.add_argument("--shard", type=parse_shard, default=parse_shard(os.environ.get("FUZZ_SHARD", "0/1")),
                    help="I/N: run only tasks I, I+N, I+2N, ... of the campaign (split it over N runs)")
    ap.add_argument("--config", action="append", help="only these configurations (by name)")
    ap.add_argument("--case", type=int, default=None, help="replay one case index")
    ap.add_argument("--keep-going", action="store_true", help="report every failure, not just the first")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(os.environ.get("FUZZ_SEED") or time.time_ns() % 10**9)
    configs = [(n, o) for n, o in FUZZ_CONFIGURATIONS if not args.config or n in args.config]
    if not configs:
        ap.error(f"no such configuration; known: {[n for n, _ in FUZZ_CONFIGURATIONS]}")
    allow = allowed_from_env()
    print(f"fuzz: seed={seed} device={args.device} cases={args.queries} jobs={args.jobs} "
          f"shard={args.shard[0]}/{args.shard[1]} "
          f"configurations={[n for n, _ in configs]}", flush=True)
    print(f"fuzz: known issues left out: {sorted(set(KNOWN_ISSUES) - allow)} (HETDB_FUZZ_ALLOW draws, HETDB_FUZZ_DENY leaves out)",
          flush=True)
    tasks = campaign_tasks(configs, args.queries, seed, args.device, args.keep_going, args.case, args.shard)
    left = Counter(task[0] for task in tasks)
    by_config = {name: FuzzStats() for name, _ in configs}
    total = FuzzStats()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        futures = {pool.submit(run_configuration, *task): task[0] for task in tasks}
        for future in as_completed(futures):
            if future.cancelled():
                continue
            name, stats = futures[future], future.result()
            total.add(stats)
            mine = by_config[name]
            mine.add(stats)
            mine.seconds += stats.seconds
            left[name] -= 1
            if stats.failures:
                print("\n\n".join(stats.failures if args.keep_going else stats.failures[:1]), flush=True)
                if not args.keep_going:
                    for other in futures:
                        other.cancel()
            if left[name] == 0:
                print(f"fuzz: [{name}] {mine.summary()} in {mine.seconds:.0f} s "
                      f"({mine.cases / max(mine.seconds, 1e-9):.1f} cases/s)", flush=True)
    print(f"fuzz: total seed={seed}: {total.summary()}", flush=True)
    if total.failures:
        print(f"fuzz: replay a case with: python {Path(__file__).name} --seed {seed} --case N "
              "[--config NAME]", flush=True)
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
