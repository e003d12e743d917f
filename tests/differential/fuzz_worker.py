"""One process of a fuzz campaign (``fuzz_main.py``): everything a case needs, built once and kept.

A process builds the fuzz databases (``diff_fuzzdata``; the plain-page copy only when a configuration
reads it), loads one DuckDB and opens one hetdb connection per configuration of its device, then runs
task after task with them. Case ``i`` runs under every configuration in turn, each configuration with
values of its own (``variant``: the CPU's default configuration draws the plain stream of the fuzz
tests, every other its own) in the case's one shape: the compiled CPU loops (and GPU kernels) of the
shape take literals as parameters, so they are compiled by the first configuration and found in the
process's kernel cache by the others, which is what makes a campaign cheap (a fresh shape's compile
is most of a case's time), while each configuration still answers queries no other one ran. Every
check of ``diff_fuzz.FuzzRunner`` runs unchanged under every configuration.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass

from diff_data import load_duckdb
from diff_fuzz import FuzzRunner, FuzzStats
from diff_fuzzconfig import configurations_of, split_options
from diff_fuzzdata import build_fuzz
from diff_fuzzgen import allowed_from_env, sample_values

import hetdb


@dataclass(frozen=True)
class Config:
    """One executor configuration of a campaign: a device and ``hetdb.connect`` options."""

    device: str
    name: str
    options: tuple  # sorted (key, value) pairs: hashable, picklable

    @property
    def label(self) -> str:
        return f"{self.device} {self.name}"

    @property
    def variant(self) -> str:
        """Whose values this configuration's cases draw (``diff_fuzzgen.case_generator``)."""
        return "" if (self.device, self.name) == ("cpu", "default") else self.label


def configurations(device: str, names: list[str] | None = None) -> list[Config]:
    """The configurations of ``device`` (cpu | gpu), all or those named."""
    return [Config(device, name, tuple(sorted(options.items())))
            for name, options in configurations_of(device) if not names or name in names]


class Harness:
    """The databases, DuckDB and one hetdb connection per configuration of one process."""

    def __init__(self, configs: list[Config]):
        self._tmp = tempfile.TemporaryDirectory(prefix="hetdb-fuzz-")
        wanted = {split_options(dict(c.options))[0] for c in configs}
        paths = {}
        for compression in sorted(wanted | {"auto"}):
            paths[compression] = os.path.join(self._tmp.name, f"fuzz-{compression}")
            build_fuzz(paths[compression], compression)
        self.duck, _, _ = load_duckdb(paths["auto"])
        self.duck.execute("SET threads TO 1")  # one process per core: DuckDB's answers do not need more
        samples = sample_values(self.duck)
        self.reference: dict = {}  # DuckDB's answers (by SQL text), cleared per case
        allow = allowed_from_env()
        self.runners: list[tuple[Config, FuzzRunner]] = []
        self.connections = []
        for c in configs:
            compression, options = split_options(dict(c.options))
            con = hetdb.connect(paths[compression], device=c.device, **options)
            self.connections.append(con)
            self.runners.append((c, FuzzRunner(c.label, _answer(con), self.duck, samples, allow,
                                               self.reference, c.variant)))

    def run(self, seed: int, start: int, count: int, deadline: float | None = None) -> dict:
        """Cases ``start ..`` (up to ``count``, stopping between cases once ``deadline`` has passed)
        under every configuration: {"done": cases run, "stats": label -> FuzzStats fields,
        "failures": [{"config", "device", "case", "text"}]}."""
        stats = {c.label: FuzzStats() for c, _ in self.runners}
        failures: list[dict] = []
        done = 0
        for index in range(start, start + count):
            if deadline is not None and time.time() >= deadline:
                break
            for config, runner in self.runners:
                mine = stats[config.label]
                before, t0 = len(mine.failures), time.perf_counter()
                try:
                    runner.run_case(seed, index, mine)
                except Exception as e:  # the harness itself failed: report the case, go on
                    tb = "".join(traceback.format_exception(e)[-4:])
                    mine.failures.append(f"--- {config.label} seed={seed} case={index}: harness error "
                                         f"{type(e).__name__}: {e}\n{tb}")
                mine.seconds += time.perf_counter() - t0
                failures += [{"config": config.name, "device": config.device, "case": index, "text": text}
                             for text in mine.failures[before:]]
            self.reference.clear()
            done += 1
        return {"done": done, "failures": failures,
                "stats": {label: {k: v for k, v in asdict(s).items() if k != "failures"}
                          | {"failures": len(s.failures)} for label, s in stats.items()}}


def _answer(con):
    return lambda sql: con.sql(sql).arrow()


_HARNESSES: dict[tuple[str, ...], Harness] = {}


def run_task(configs: tuple[Config, ...], seed: int, start: int, count: int,
             deadline: float | None = None) -> dict:
    """One task of a campaign in this process (its harness built on the first task and kept)."""
    t0 = time.time()
    key = tuple(c.label for c in configs)
    harness = _HARNESSES.get(key)
    if harness is None:
        harness = _HARNESSES[key] = Harness(list(configs))
    result = harness.run(seed, start, count, deadline)
    result.update(device=configs[0].device, seed=seed, start=start, seconds=time.time() - t0, pid=os.getpid())
    return result

