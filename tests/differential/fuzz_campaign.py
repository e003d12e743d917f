"""The state of a fuzz campaign on disk: what is done, what failed, and its summary.

A campaign is (seed, cases per configuration, configurations per device). Its directory holds

  campaign.json   the campaign's identity (resuming with another seed or size is refused)
  results.jsonl   one line per finished task: device, first case, cases done, seconds, per-configuration
                  counts (FuzzStats fields) and every failure (configuration, case, report)
  failures.txt    every mismatch or crash: the report (SQL, both answers) and the command replaying it
  summary.txt     cases run and answers checked per configuration, failures, throughput (rewritten
                  after every task)

Work is tracked as ranges of case indices done per device (every configuration of the device runs
each case of a task), so a run stopped at any moment resumes where its finished tasks end; a task
cut short by its deadline records the cases it finished.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# cases per task: small enough that a stopped run loses little and 16 processes share the work evenly;
# a process runs WORKER_CASES cases (then a fresh one: each query shape leaves ~1 MB of compiled code)
TASK_CASES = 100
WORKER_CASES = 2000
COUNTS = ("cases", "differential", "oracle_checks", "oracle_queries", "hetdb_queries", "errors_agreed",
          "skipped", "nonempty", "failures")
# where the time went (fuzz_worker.CompileClock; absent in older results)
TIMES = ("nvrtc_compiles", "nvrtc_seconds", "numba_compiles", "numba_seconds", "gc_collections", "gc_seconds")


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Half-open ranges [a, b) merged into sorted disjoint ones."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def subtract(a: int, b: int, done: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of [a, b) outside the merged ranges ``done``."""
    out, at = [], a
    for x, y in done:
        if y <= at or x >= b:
            continue
        if x > at:
            out.append((at, x))
        at = max(at, y)
    if at < b:
        out.append((at, b))
    return out


def plan_tasks(first: int, last: int, shard: tuple[int, int], done: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(start, count) of the tasks left in cases [first, last): the campaign's blocks of TASK_CASES
    cases (aligned to multiples of TASK_CASES, so every run of a campaign cuts them alike), those of
    shard (I, N) = blocks I, I+N, ..., less the cases ``done``."""
    i, n = shard
    tasks = []
    for block in range(first // TASK_CASES, -(-last // TASK_CASES)):
        if block % n != i:
            continue
        lo, hi = max(first, block * TASK_CASES), min(last, (block + 1) * TASK_CASES)
        tasks += [(x, y - x) for x, y in subtract(lo, hi, done)]
    return tasks


@dataclass
class Campaign:
    path: Path
    seed: int
    queries: int
    results: list[dict] = field(default_factory=list)
    values: str = "configuration"  # whose values a case draws (fuzz_worker.VALUES)

    @classmethod
    def open(cls, path: str | os.PathLike, seed: int | None, queries: int | None,
             values: str | None = None) -> Campaign:
        """The campaign at ``path``, created when new (``seed`` and ``queries`` required then); an
        existing one keeps its seed, size and values (given ones must match)."""
        path = Path(path)
        meta = path / "campaign.json"
        if meta.exists():
            known = json.loads(meta.read_text())
            known.setdefault("values", "configuration")  # (campaigns from before the choice)
            for name, given in (("seed", seed), ("queries", queries), ("values", values)):
                if given is not None and given != known[name]:
                    raise SystemExit(f"fuzz: {path} is a campaign with {name}={known[name]}, not {given} "
                                     "(another --dir starts another campaign)")
            campaign = cls(path, known["seed"], known["queries"], values=known["values"])
            if (path / "results.jsonl").exists():
                campaign.add_results(path / "results.jsonl")
            return campaign
        if seed is None or queries is None:
            raise SystemExit("fuzz: a new campaign needs a seed and a size")
        path.mkdir(parents=True, exist_ok=True)
        values = values or "configuration"
        meta.write_text(json.dumps({"seed": seed, "queries": queries, "values": values}) + "\n")
        return cls(path, seed, queries, values=values)

    def add_results(self, path: Path) -> None:
        """The finished tasks of a results.jsonl (this campaign's, or another run's of the same campaign)."""
        for line in path.read_text().splitlines():
            try:
                result = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill: its task runs again
                continue
            if result.get("seed", self.seed) != self.seed:
                raise SystemExit(f"fuzz: {path} holds cases of seed {result['seed']}, not {self.seed}")
            self.results.append(result)

    def done(self, device: str) -> list[tuple[int, int]]:
        return merge_ranges([(r["start"], r["start"] + r["done"]) for r in self.results if r["device"] == device])

    def record(self, result: dict, replay: str) -> None:
        """Append a finished task; its failures go to failures.txt with ``replay`` (a command with
        {case} {config} {device} to fill in)."""
        self.results.append(result)
        with open(self.path / "results.jsonl", "a") as f:
            f.write(json.dumps(result) + "\n")
        if result["failures"]:
            with open(self.path / "failures.txt", "a") as f:
                for fail in result["failures"]:
                    f.write(f"=== {fail['device']} {fail['config']} seed={self.seed} case={fail['case']}\n"
                            f"replay: {replay.format(**fail)}\n{fail['text']}\n\n")
        (self.path / "summary.txt").write_text(self.summary() + "\n")

    def totals(self) -> dict[str, dict[str, float]]:
        """Per configuration label: the COUNTS summed over every task, and its seconds."""
        out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys((*COUNTS, "seconds", *TIMES), 0))
        for r in self.results:
            for label, s in r["stats"].items():
                mine = out[label]
                for k in (*COUNTS, "seconds"):
                    mine[k] += s[k]
                for k in TIMES:
                    mine[k] += s.get(k, 0)
        return dict(out)

    def summary(self) -> str:
        lines = [f"fuzz campaign {self.path}: seed={self.seed}, {self.queries} cases per configuration"
                 + (", one set of values per device" if self.values == "device" else "")]
        for device in sorted({r["device"] for r in self.results}):
            done = self.done(device)
            cases = sum(b - a for a, b in done)
            seconds = sum(r["seconds"] for r in self.results if r["device"] == device)
            runs = sum(s["cases"] for r in self.results if r["device"] == device for s in r["stats"].values())
            ranges = ", ".join(f"{a}..{b - 1}" for a, b in done[:6]) + (" ..." if len(done) > 6 else "")
            lines.append(f"{device}: {cases} of {self.queries} cases done under each configuration ({ranges}); "
                         f"{runs} case runs in {seconds:.0f} s of worker time = {runs / max(seconds, 1e-9):.1f} "
                         "case runs per worker-second")
            mine = [r for r in self.results if r["device"] == device]
            if any("harness_seconds" in r for r in mine):
                t = {k: sum(s.get(k, 0) for r in mine for s in r["stats"].values()) for k in TIMES}
                lines.append(f"{device}: of that, building harnesses {sum(r.get('harness_seconds', 0) for r in mine):.0f} s, "
                             f"NVRTC {t['nvrtc_compiles']:.0f} compiles in {t['nvrtc_seconds']:.0f} s, "
                             f"Numba {t['numba_compiles']:.0f} compiles in {t['numba_seconds']:.0f} s, "
                             f"garbage collections {t['gc_collections']:.0f} in {t['gc_seconds']:.0f} s (where measured)")
        failures = 0
        for label, t in sorted(self.totals().items()):
            failures += int(t["failures"])
            lines.append(f"  [{label}] {int(t['cases'])} cases, {int(t['differential'] + t['oracle_queries'])} "
                         f"answers checked ({int(t['differential'])} vs DuckDB, {int(t['nonempty'])} non-empty, "
                         f"{int(t['errors_agreed'])} agreed errors; {int(t['oracle_queries'])} in "
                         f"{int(t['oracle_checks'])} TLP/NoREC checks), {int(t['skipped'])} skipped, "
                         f"{int(t['failures'])} failures, {t['seconds']:.0f} s"
                         + (f" (NVRTC {int(t['nvrtc_compiles'])} in {t['nvrtc_seconds']:.0f} s, Numba "
                            f"{int(t['numba_compiles'])} in {t['numba_seconds']:.0f} s, gc {t['gc_seconds']:.0f} s)"
                            if t["nvrtc_compiles"] or t["numba_compiles"] or t["gc_seconds"] else ""))
        lines.append(f"failures: {failures}" + (f" (reports and replay commands: {self.path / 'failures.txt'})"
                                                if failures else ""))
        return "\n".join(lines)
