"""Concurrent writers of one table as real processes (issue 15's report): repeated trials of `hetdb
import` processes started together, each checked for the issue's rules (writers serialise, versions
only grow, a reported commit is never deleted, each writer reports its own version and row count,
a writer killed while holding the lock blocks nobody, readers see whole versions without a lock).

    PYTHONPATH=src python scripts/writer_trials.py [--trials 10] [--writers 4] [--dir /tmp/wt]

Trials (each in a fresh database):
  new-table   W imports of one new table: exactly one succeeds (version 1, its own rows), the others
              are refused with CatalogError "already exists" (no traceback)
  replace     W `--replace` imports of one table: versions 1..W each reported once, CURRENT on the
              highest, each writer's own row count, the table holds the last writer's rows, only the
              current and previous version directories left
  killed      a writer holding the lock is SIGKILLed while a `--replace` import waits: the waiter then
              commits (its own rows and version)
  readers     a reader process reads the table in a loop during W replaces: every read sees one
              writer's rows whole (one tag, that writer's row count)
Prints per kind: trials, violations (each described), seconds; exit 1 when any rule was broken.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT = re.compile(r"imported ([\d,]+) rows into t \(version (\d+)\)")
WAIT_GO = textwrap.dedent("""
    import os, sys, time
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.005)
    from hetdb.cli.main import main
    sys.exit(main(["import", *sys.argv[2:]]))
""")
HOLDER = textwrap.dedent("""
    import sys, time
    import pyarrow as pa
    from hetdb import types as T
    from hetdb.storage import Database
    from hetdb.storage.format import ColumnSpec
    db = Database.open(sys.argv[1])
    w = db.create_table("t", [ColumnSpec("k", T.INT64, True), ColumnSpec("tag", T.INT64, True)], replace=True)
    w.append_arrow(pa.table({"k": pa.array([1, 2], pa.int64()), "tag": pa.array([-1, -1], pa.int64())}))
    print("holding", flush=True)
    time.sleep(600)
""")
READER = textwrap.dedent("""
    import sys, time, collections, json
    from hetdb.storage import Database
    db = Database.open(sys.argv[1])
    seen, t_end = collections.Counter(), time.time() + float(sys.argv[2])
    while time.time() < t_end:
        try:
            t = db.table("t").arrow()
        except Exception as e:
            seen["error " + type(e).__name__] += 1
            continue
        seen[json.dumps([sorted(set(t.column("tag").to_pylist())), t.num_rows])] += 1
    print(json.dumps(seen), flush=True)
""")


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def rows_of(i: int) -> int:
    return 500 * (i + 1)


def parquet(d: str, i: int) -> str:
    path = os.path.join(d, f"w{i}.parquet")
    n = rows_of(i)
    pq.write_table(pa.table({"k": pa.array(range(n), pa.int64()), "tag": pa.array([i] * n, pa.int64())}), path)
    return path


def start_together(d: str, db: str, files: list[str], replace: bool) -> list[tuple[int, str, str]]:
    go = os.path.join(d, "go")
    extra = ["--replace"] if replace else []
    procs = [subprocess.Popen([sys.executable, "-c", WAIT_GO, go, db, "t", f, *extra], env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in files]
    time.sleep(1.0)  # every interpreter started and waits on the go file
    open(go, "w").close()
    return [(p.wait(timeout=600), *p.communicate()) for p in procs]


def new_db(d: str) -> str:
    from hetdb.storage import Database

    return Database.open(os.path.join(d, "db"), create=True).path


def trial_new_table(d: str, w: int) -> list[str]:
    from hetdb.storage import Database

    db = new_db(d)
    results = start_together(d, db, [parquet(d, i) for i in range(w)], replace=False)
    bad, ok = [], [(i, REPORT.search(out)) for i, (rc, out, _) in enumerate(results) if rc == 0]
    refused = [err for rc, _, err in results if rc != 0]
    if len(ok) != 1:
        return [f"{len(ok)} of {w} new-table imports succeeded"]
    if any("already exists" not in e or "Traceback" in e for e in refused):
        bad.append(f"a refused import did not say 'already exists' cleanly: {refused}")
    i, m = ok[0]
    t = Database.open(db).table("t")
    if m is None or int(m.group(2)) != 1 or int(m.group(1).replace(",", "")) != rows_of(i):
        bad.append(f"the winner reported {m and m.group(0)}, not version 1 with {rows_of(i)} rows")
    if t.num_rows != rows_of(i) or set(t.arrow().column("tag").to_pylist()) != {i}:
        bad.append(f"the table holds {t.num_rows} rows, not the winner's {rows_of(i)}")
    return bad


def trial_replace(d: str, w: int) -> list[str]:
    from hetdb.storage import Database

    db = new_db(d)
    results = start_together(d, db, [parquet(d, i) for i in range(w)], replace=True)
    bad, reports = [], {}
    for i, (rc, out, err) in enumerate(results):
        m = REPORT.search(out)
        if rc != 0 or m is None:
            bad.append(f"writer {i} failed (rc {rc}): {err[-200:]}")
            continue
        reports[i] = (int(m.group(2)), int(m.group(1).replace(",", "")))
        if reports[i][1] != rows_of(i):
            bad.append(f"writer {i} reported {reports[i][1]} rows, not its own {rows_of(i)}")
    versions = sorted(v for v, _ in reports.values())
    if versions != list(range(1, w + 1)):
        bad.append(f"reported versions {versions}, not 1..{w} once each")
    t = Database.open(db).table("t")
    if reports and t.version != max(versions):
        bad.append(f"CURRENT is version {t.version}, not the highest reported {max(versions)}")
    winner = next((i for i, (v, _) in reports.items() if v == t.version), None)
    if winner is not None and (t.num_rows != rows_of(winner) or set(t.arrow().column("tag").to_pylist()) != {winner}):
        bad.append(f"the table holds {t.num_rows} rows, not writer {winner}'s")
    left = sorted(e for e in os.listdir(os.path.join(db, "tables", "t")) if e.startswith("v"))
    if left != [f"v{t.version - 1}", f"v{t.version}"]:
        bad.append(f"version directories left: {left}")
    return bad


def trial_killed(d: str, w: int) -> list[str]:
    from hetdb.storage import Database

    db = new_db(d)
    first = subprocess.run([sys.executable, "-m", "hetdb.cli.main", "import", db, "t", parquet(d, 0)], env=env(),
                           capture_output=True, text=True, timeout=600)
    if first.returncode:
        return [f"the first import failed: {first.stderr[-200:]}"]
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, db], env=env(), stdout=subprocess.PIPE, text=True)
    bad = []
    try:
        if holder.stdout.readline().strip() != "holding":
            return ["the lock holder did not start"]
        waiter = subprocess.Popen([sys.executable, "-m", "hetdb.cli.main", "import", db, "t", parquet(d, 1),
                                   "--replace"], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)
        if waiter.poll() is not None:
            bad.append("the second writer did not wait for the lock")
        if Database.open(db).table("t").num_rows != rows_of(0):
            bad.append("a reader did not see the committed version while the lock was held")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    out, err = waiter.communicate(timeout=600)
    m = REPORT.search(out)
    t = Database.open(db).table("t")
    if waiter.returncode or m is None or int(m.group(1).replace(",", "")) != rows_of(1):
        bad.append(f"the waiter did not commit its rows after the kill (rc {waiter.returncode}): {err[-200:]}")
    elif t.version != int(m.group(2)) or t.num_rows != rows_of(1):
        bad.append(f"CURRENT is version {t.version} with {t.num_rows} rows, not the waiter's")
    return bad


def trial_readers(d: str, w: int) -> list[str]:
    db = new_db(d)
    subprocess.run([sys.executable, "-m", "hetdb.cli.main", "import", db, "t", parquet(d, w)], env=env(),
                   capture_output=True, text=True, timeout=600, check=True)
    reader = subprocess.Popen([sys.executable, "-c", READER, db, "12"], env=env(), stdout=subprocess.PIPE, text=True)
    time.sleep(2.0)
    results = start_together(d, db, [parquet(d, i) for i in range(w)], replace=True)
    out = reader.communicate(timeout=600)[0]
    bad = [f"writer failed: {err[-200:]}" for rc, _, err in results if rc]
    seen = json.loads(out)  # '[tags, rows]' (or 'error ...') -> how many reads saw it
    READS[0] += sum(seen.values())
    READS[1] += sum(1 for k in seen if not k.startswith("error"))
    for key in seen:
        if key.startswith("error"):
            bad.append(f"a read failed: {key}")
            continue
        tags, rows = json.loads(key)
        if len(tags) != 1 or rows != rows_of(tags[0]):
            bad.append(f"a read saw {rows} rows with tags {tags}: not one writer's whole version")
    if sum(seen.values()) < 10:
        bad.append(f"the reader read only {sum(seen.values())} times")
    return bad


READS = [0, 0]  # reads made by the readers' trials, distinct versions they saw
KINDS = {"new-table": trial_new_table, "replace": trial_replace, "killed": trial_killed, "readers": trial_readers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--dir", default=None, help="where the trials' databases go (default: a temporary folder)")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "src"))
    broken = 0
    base = args.dir or tempfile.mkdtemp(prefix="hetdb-writers-")
    for kind in args.kinds:
        t0, problems = time.time(), []
        for trial in range(args.trials):
            d = os.path.join(base, f"{kind}-{trial}")
            os.makedirs(d, exist_ok=True)
            problems += [f"trial {trial}: {p}" for p in KINDS[kind](d, args.writers)]
        broken += len(problems)
        reads = f"; {READS[0]} reads saw {READS[1]} versions, each whole" if kind == "readers" else ""
        print(f"{kind:9s} {args.trials} trials x {args.writers} writers: {len(problems)} violations "
              f"({time.time() - t0:.0f} s){reads}", flush=True)
        for p in problems:
            print(f"  {p}", flush=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
