"""`make fuzz`: a long seeded fuzz campaign over the fuzz tables under every configuration.

    python tests/differential/fuzz_main.py [--queries 100000] [--seed N] [--device cpu|gpu]
                                           [--config NAME ...] [--case I] [--keep-going]

The cases are split evenly over the configurations (``FUZZ_CONFIGURATIONS``); each configuration runs
its own slice of case indices, so every case number of the campaign is drawn once. Prints the seed,
progress per configuration, and the first failing query (or, with --keep-going, every one); exits 1
on any failure. ``--case I`` replays one case under every chosen configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_data import load_duckdb  # noqa: E402
from diff_fuzz import FuzzRunner, FuzzStats  # noqa: E402
from diff_fuzzconfig import FUZZ_CONFIGURATIONS  # noqa: E402
from diff_fuzzdata import build_fuzz  # noqa: E402
from diff_fuzzgen import KNOWN_ISSUES, allowed_from_env, sample_values  # noqa: E402

import hetdb  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=int(os.environ.get("FUZZ_QUERIES", "100000")))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--device", default=os.environ.get("FUZZ_DEVICE", "cpu"))
    ap.add_argument("--config", action="append", help="only these configurations (by name)")
    ap.add_argument("--case", type=int, default=None, help="replay one case index")
    ap.add_argument("--keep-going", action="store_true", help="report every failure, not just the first")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(os.environ.get("FUZZ_SEED") or time.time_ns() % 10**9)
    configs = [(n, o) for n, o in FUZZ_CONFIGURATIONS if not args.config or n in args.config]
    if not configs:
        ap.error(f"no such configuration; known: {[n for n, _ in FUZZ_CONFIGURATIONS]}")
    allow = allowed_from_env()
    print(f"fuzz: seed={seed} device={args.device} queries={args.queries} "
          f"configurations={[n for n, _ in configs]}", flush=True)
    print(f"fuzz: known issues left out: {sorted(set(KNOWN_ISSUES) - allow)} (HETDB_FUZZ_ALLOW to draw them)")
    with tempfile.TemporaryDirectory(prefix="hetdb-fuzz-") as tmp:
        path = os.path.join(tmp, "fuzz")
        build_fuzz(path)
        duck, _, _ = load_duckdb(path)
        samples = sample_values(duck)
        cache: dict = {}
        total = FuzzStats()
        per = -(-args.queries // len(configs))
        for i, (name, options) in enumerate(configs):
            con = hetdb.connect(path, device=args.device, **options)
            runner = FuzzRunner(name, lambda sql, c=con: c.sql(sql).arrow(), duck, samples, allow, cache)
            start, count = (args.case, 1) if args.case is not None else (i * per, per)
            stats, t0 = FuzzStats(), time.time()
            for chunk in range(start, start + count, 1000):
                part = runner.run(seed, min(1000, start + count - chunk), chunk, stop_at_first=not args.keep_going)
                stats.add(part)
                if part.failures and not args.keep_going:
                    break
            con.close()
            print(f"fuzz: [{name}] {stats.summary()} in {time.time() - t0:.0f} s", flush=True)
            total.add(stats)
            if stats.failures:
                print("\n\n".join(stats.failures[: 1 if not args.keep_going else None]), flush=True)
                if not args.keep_going:
                    break
            if len(cache) > 200_000:
                cache.clear()
        print(f"fuzz: total seed={seed}: {total.summary()}")
        return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
