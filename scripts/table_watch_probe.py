"""What a hot query's plan-cache check costs per table on this machine's file system: a stat of the
table's CURRENT (Database.is_current before storage/change_watch.py) against the change watch's
answer (no event since the last validation), each timed over many calls.

    PYTHONPATH=src python scripts/table_watch_probe.py DB [--calls 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from hetdb.storage import Database
from hetdb.storage.change_watch import WATCH, _local_file_system


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args(argv)
    db = Database.open(args.db)
    for name in db.tables()[:3]:
        reader = db.table(name)
        fresh = db._fresh[name]
        current, tdir, token = fresh[0], fresh[5], fresh[6]
        t0 = time.perf_counter()
        for _ in range(args.calls):
            os.stat(current)
        t1 = time.perf_counter()
        for _ in range(args.calls):
            WATCH.unchanged(tdir, token)
        t2 = time.perf_counter()
        for _ in range(args.calls):
            db.is_current(name, reader)
        t3 = time.perf_counter()
        local = WATCH._libc is not None and _local_file_system(WATCH._libc, tdir)
        print(f"{name}: stat of CURRENT {(t1 - t0) / args.calls * 1e6:.2f} us, watch {(t2 - t1) / args.calls * 1e6:.2f} us "
              f"(watched: {token is not None}, local file system: {local}), is_current "
              f"{(t3 - t2) / args.calls * 1e6:.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
