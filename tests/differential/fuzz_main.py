"""`make fuzz`: a long seeded fuzz campaign over the fuzz tables under every configuration.

    python tests/differential/fuzz_main.py [--queries 100000 (per configuration)] [--seed N] [--device cpu|gpu] [--jobs J]
                                           [--config NAME ...] [--case I] [--keep-going]

(environment defaults: FUZZ_QUERIES, FUZZ_SEED, FUZZ_DEVICE, FUZZ_JOBS; HETDB_FUZZ_ALLOW/DENY as in the tests)

``--queries`` cases run under each configuration (``FUZZ_CONFIGURATIONS``); configuration i runs case
indices i*queries .. (i+1)*queries-1, so no two configurations draw the same case. Prints the seed,
progress per configuration, and the first failing query (or, with --keep-going, every one); exits 1
on any failure. ``--case I`` replays one case under every chosen configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
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
            print(f"fuzz: [{name}] {min(chunk + 1000, start + count) - start} of {count} cases, "
                  f"{len(stats.failures)} failures, {time.time() - t0:.0f} s", flush=True)
        con.close()
        stats.seconds = time.time() - t0
        return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=int(os.environ.get("FUZZ_QUERIES", "100000")),
                    help="cases per configuration (each one query compared with DuckDB, some also an oracle)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--device", default=os.environ.get("FUZZ_DEVICE", "cpu"))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FUZZ_JOBS", "1")),
                    help="configurations run in parallel processes")
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
          f"configurations={[n for n, _ in configs]}", flush=True)
    print(f"fuzz: known issues left out: {sorted(set(KNOWN_ISSUES) - allow)} (HETDB_FUZZ_ALLOW draws, HETDB_FUZZ_DENY leaves out)",
          flush=True)
    per = args.queries
    tasks = [(name, options, seed, *((args.case, 1) if args.case is not None else (i * per, per)),
              args.device, args.keep_going) for i, (name, options) in enumerate(configs)]
    total = FuzzStats()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(run_configuration, *task): task[0] for task in tasks}
        for future in as_completed(futures):
            name, stats = futures[future], future.result()
            print(f"fuzz: [{name}] {stats.summary()} in {stats.seconds:.0f} s "
                  f"({stats.cases / max(stats.seconds, 1e-9):.1f} cases/s)", flush=True)
            total.add(stats)
            if stats.failures:
                print("\n\n".join(stats.failures if args.keep_going else stats.failures[:1]), flush=True)
    print(f"fuzz: total seed={seed}: {total.summary()}", flush=True)
    if total.failures:
        print(f"fuzz: replay a case with: python {Path(__file__).name} --seed {seed} --case N "
              "[--config NAME]", flush=True)
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
