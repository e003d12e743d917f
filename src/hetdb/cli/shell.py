"""`hetdb shell`: an interactive SQL prompt with history (readline), statements end with ';'."""

from __future__ import annotations

import os
import time

from hetdb.errors import HetdbError

HISTORY = os.path.expanduser("~/.hetdb_history")


def run_shell(con) -> int:
    try:
        import readline

        try:
            readline.read_history_file(HISTORY)
        except OSError:
            pass
    except ImportError:
        readline = None
    from hetdb.cli.commands import _print_result, console

    console.print(f"hetdb shell on {con.db.path} ({con.device}). End statements with ';'. "
                  "Commands: .tables, .explain SQL, .quit")
    buf: list[str] = []
    while True:
        try:
            line = input("hetdb> " if not buf else "  ...> ")
        except EOFError:
            print()
            break
        except KeyboardInterrupt:
            print()
            buf = []
            continue
        stripped = line.strip()
        if not buf and stripped in (".quit", ".exit"):
            break
        if not buf and stripped == ".tables":
            console.print("\n".join(con.tables()) or "(no tables)")
            continue
        buf.append(line)
        text = "\n".join(buf).strip()
        if not text.endswith(";") and not text.startswith(".explain"):
            continue
        buf = []
        try:
            if text.startswith(".explain"):
                console.print(con.explain(text[len(".explain"):].strip().rstrip(";")), markup=False)
                continue
            t0 = time.perf_counter()
            res = con.sql(text.rstrip(";"))
            _print_result(res.arrow(), "table", 50)
            console.print(f"{res.num_rows:,} rows in {(time.perf_counter() - t0) * 1000:.1f} ms", style="dim")
        except HetdbError as e:
            console.print(f"error: {type(e).__name__}: {e}", style="red", markup=False, highlight=False)
    if readline is not None:
        try:
            readline.write_history_file(HISTORY)
        except OSError:
            pass
    return 0
