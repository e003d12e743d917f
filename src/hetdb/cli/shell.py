"""`hetdb shell`: an interactive SQL prompt. Statements end with ';' and may span lines; dot commands
are read on their own line. On a terminal it uses prompt_toolkit (completion of keywords, tables and
columns, history); with piped input it reads lines."""

from __future__ import annotations

import os
import sys
import time

from hetdb.errors import HetdbError

HISTORY = os.path.expanduser("~/.hetdb_history")
KEYWORDS = ["SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "HAVING", "LIMIT", "OFFSET", "JOIN", "LEFT JOIN",
            "ON", "AS", "AND", "OR", "NOT", "IN", "EXISTS", "BETWEEN", "LIKE", "CASE", "WHEN", "THEN", "ELSE",
            "END", "DISTINCT", "UNION ALL", "WITH", "CREATE TABLE", "CREATE VIEW", "INSERT INTO", "VALUES",
            "DROP TABLE", "DROP VIEW", "COPY", "TO", "DESCRIBE", "SHOW TABLES", "SUMMARIZE", "EXPLAIN",
            "ANALYZE", "SET", "RESET", "read_parquet", "read_csv", "count", "sum", "avg", "min", "max"]
HELP = """.help              this list
.tables            tables and views
.schema [TABLE]    columns and types of one table (or of all)
.timer on|off      print the time of each statement
.mode table|csv|json   output format
.maxrows N         rows printed in table mode
.explain SQL       the physical plan of a query
.quit / .exit      leave (Ctrl-D too)
SQL statements end with ';' and may span several lines."""


class Shell:
    def __init__(self, con, out=None) -> None:
        from hetdb.cli.commands import console

        self.con = con
        self.console = console
        self.timer = True
        self.mode = "table"
        self.max_rows = 50

    def words(self) -> list[str]:
        """Completion candidates: keywords, tables, views and their columns."""
        words = list(KEYWORDS)
        try:
            for name in self.con.tables():
                words.append(name)
                words.extend(spec.name for spec in self.con.table(name).schema)
        except HetdbError:
            pass
        return sorted(set(words), key=str.lower)

    def dot(self, line: str) -> bool:
        """Run a dot command; False to leave the shell."""
        cmd, _, rest = line.partition(" ")
        rest = rest.strip()
        p = self.console.print
        if cmd in (".quit", ".exit"):
            return False
        if cmd == ".help":
            p(HELP, markup=False, highlight=False)
        elif cmd == ".tables":
            names = [r[0] for r in self.con.sql("SHOW TABLES").fetchall()]
            p("\n".join(names) or "(no tables)", markup=False)
        elif cmd == ".schema":
            names = [rest] if rest else self.con.tables()
            for n in names:
                cols = self.con.sql(f'DESCRIBE "{n}"').fetchall()
                p(f"CREATE TABLE {n} (" + ", ".join(f"{c[0]} {c[1]}" for c in cols) + ");", markup=False)
        elif cmd == ".timer":
            self.timer = rest.lower() != "off"
            p(f"timer {'on' if self.timer else 'off'}")
        elif cmd == ".mode":
            if rest not in ("table", "csv", "json"):
                p("usage: .mode table|csv|json", style="red")
            else:
                self.mode = rest
        elif cmd == ".maxrows":
            if rest.isdigit():
                self.max_rows = int(rest)
            else:
                p("usage: .maxrows N", style="red")
        elif cmd == ".explain":
            p(self.con.explain(rest.rstrip(";")), markup=False, highlight=False)
        else:
            p(f"unknown command {cmd}: .help lists them", style="red", markup=False)
        return True

    def run_sql(self, text: str) -> None:
        from hetdb.cli.commands import print_result
        from hetdb.cli.progress import engine_status, progress_line

        t0 = time.perf_counter()
        with progress_line(status=engine_status(self.con)):
            res = self.con.sql(text)
        dt = time.perf_counter() - t0
        if res.arrow().num_columns:
            print_result(res.arrow(), self.mode, self.max_rows)
        if self.timer:
            self.console.print(f"{res.num_rows:,} rows in {dt * 1000:.1f} ms", style="dim")

    def handle(self, buf: list[str], line: str) -> bool | None:
        """Feed one input line; returns False to quit."""
        stripped = line.strip()
        if not buf and stripped.startswith("."):
            try:
                return self.dot(stripped)
            except HetdbError as e:
                self.error(e)
                return True
        if not buf and not stripped:
            return True
        buf.append(line)
        text = "\n".join(buf).strip()
        if not text.endswith(";"):
            return True
        buf.clear()
        try:
            self.run_sql(text)
        except HetdbError as e:
            self.error(e)
        return True

    def error(self, e: Exception) -> None:
        from hetdb.cli.main import cli_message

        self.console.print(f"error: {type(e).__name__}: {cli_message(e)}", style="red", markup=False,
                           highlight=False)


def run_shell(con) -> int:
    shell = Shell(con)
    shell.console.print(f"hetdb shell on {con.db.path} ({con.device}). End statements with ';'. "
                        ".help lists the commands.", markup=False)
    buf: list[str] = []
    session = None
    if sys.stdin.isatty():
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory

        session = PromptSession(history=FileHistory(HISTORY))
    try:
        while True:
            prompt = "hetdb> " if not buf else "  ...> "
            try:
                if session is not None:
                    from prompt_toolkit.completion import WordCompleter

                    line = session.prompt(prompt, completer=WordCompleter(shell.words(), ignore_case=True,
                                                                          sentence=False))
                else:
                    line = input(prompt)
            except EOFError:
                print()
                break
            except KeyboardInterrupt:
                print()
                buf = []
                continue
            if shell.handle(buf, line) is False:
                break
    finally:
        con.close()
    return 0
