"""One process of a fuzz campaign (``fuzz_main.py``): everything a case needs, built once and kept.

A process builds the fuzz databases (``diff_fuzzdata``; the plain-page copy only when a configuration
reads it), loads one DuckDB and opens one hetdb connection per configuration of its device, then runs
task after task with them. Case ``i`` runs under every configuration in turn, each configuration with
values of its own (``variant``: the CPU's default configuration draws the plain stream of the fuzz
tests, every other its own) in the case's one shape: the compiled CPU loops (and GPU kernels) of the
shape take literals as parameters, so they are compiled by the first configuration and found in the
process's kernel cache by the others, which is what makes a campaign cheap (a fresh shape's compile
is most of a case's time), while each configuration still answers queries no other one ran. Every
check of ``diff_fuzz.FuzzRunner`` runs unchanged under every configuration. A campaign with
``values="device"`` has every configuration of a device draw the same values (``VALUES``).
``CompileClock`` counts each configuration's NVRTC and Numba
compiles and garbage collections (results.jsonl: ``nvrtc_compiles``, ``nvrtc_seconds``, ``numba_*``,
``gc_collections``, ``gc_seconds`` per configuration; the harness's build time per task as
``harness_seconds``).
"""

from __future__ import annotations

import gc
import os
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass

from diff_data import load_duckdb
from diff_fuzz import FuzzRunner, FuzzStats
from diff_fuzzconfig import configurations_of, split_options
from diff_fuzzdata import build_fuzz
from diff_fuzzgen import allowed_from_env, sample_values

import hetdb

# whose values a case draws: each configuration its own ("configuration"), or one set for every
# configuration of a device ("device"). The GPU's generated kernels, as the CPU's loops, take literals
# as parameters (codegen/expr_cuda.literal_params), so either way a configuration finds the kernels of
# a shape another one compiled; before, values of its own cost each GPU configuration an NVRTC compile
# of every kernel of the case (rel9's campaign A against B: 3.3 against 6.8 case runs per worker-second).
VALUES = ("configuration", "device")


@dataclass(frozen=True)
class Config:
    """One executor configuration of a campaign: a device and ``hetdb.connect`` options."""

    device: str
    name: str
    options: tuple  # sorted (key, value) pairs: hashable, picklable
    values: str = "configuration"  # see VALUES

    @property
    def label(self) -> str:
        return f"{self.device} {self.name}"

    @property
    def variant(self) -> str:
        """Whose values this configuration's cases draw (``diff_fuzzgen.case_generator``)."""
        if self.values == "device":
            return "" if self.device == "cpu" else self.device
        return "" if (self.device, self.name) == ("cpu", "default") else self.label


def configurations(device: str, names: list[str] | None = None, values: str = "configuration") -> list[Config]:
    """The configurations of ``device`` (cpu | gpu), all or those named."""
    if values not in VALUES:
        raise ValueError(f"values {values!r}: expected one of {VALUES}")
    return [Config(device, name, tuple(sorted(options.items())), values)
            for name, options in configurations_of(device) if not names or name in names]


class CompileClock:
    """Counts and wall seconds of NVRTC compiles and Numba compiles in this process, by the
    configuration whose case is running (``label``): where a fuzz case's time goes."""

    _shared: CompileClock | None = None

    def __init__(self) -> None:
        self.label = ""
        self.by_label: dict[str, dict[str, list]] = {}
        self._local = threading.local()

    @classmethod
    def shared(cls) -> CompileClock:
        """The process's clock (installed once: every harness of the process reads it)."""
        if cls._shared is None:
            cls._shared = cls()
            cls._shared.install()
        return cls._shared

    def install(self) -> None:
        import numba.core.dispatcher as dispatcher

        from hetdb.backend.gpu import compile as gpu_compile

        self._wrap(gpu_compile, "_compile_cubin", "nvrtc")
        self._wrap(dispatcher.Dispatcher, "compile", "numba")
        gc.callbacks.append(self._collection)

    def _collection(self, phase: str, info: dict) -> None:
        """Garbage collections (gc.callbacks): a full one walks every object of the process, which
        grows with what a worker keeps (11 connections, DuckDB, compiled code), and the GPU engine
        collects after a query that leaves device memory allocated (exec/device.leaked_bytes)."""
        if phase == "start":
            self._local.gc_start = time.perf_counter()
            return
        start = getattr(self._local, "gc_start", None)
        if start is not None:
            got = self.by_label.setdefault(self.label, {}).setdefault("gc", [0, 0.0])
            got[0] += 1
            got[1] += time.perf_counter() - start
            self._local.gc_start = None

    def _wrap(self, owner, name: str, kind: str) -> None:
        inner = getattr(owner, name)
        clock = self

        def timed(*args, **kwargs):
            if getattr(clock._local, kind, False):  # (nested: counted by the outermost)
                return inner(*args, **kwargs)
            setattr(clock._local, kind, True)
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                setattr(clock._local, kind, False)
                got = clock.by_label.setdefault(clock.label, {}).setdefault(kind, [0, 0.0])
                got[0] += 1
                got[1] += time.perf_counter() - t0

        setattr(owner, name, timed)

    def take(self, label: str) -> dict[str, float]:
        """The compiles counted for ``label`` since the last take, as FuzzStats-like extra counts."""
        got = self.by_label.pop(label, {})
        return {f"{kind}_{what}": got.get(kind, [0, 0.0])[i] for kind in ("nvrtc", "numba", "gc")
                for i, what in ((0, "compiles" if kind != "gc" else "collections"), (1, "seconds"))}


class Harness:
    """The databases, DuckDB and one hetdb connection per configuration of one process."""

    def __init__(self, configs: list[Config]):
        t0 = time.perf_counter()
        self.clock = CompileClock.shared()
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
        self.seconds = time.perf_counter() - t0  # (building it: databases, DuckDB, connections)

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
                self.clock.label = config.label
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
        self.clock.label = ""
        return {"done": done, "failures": failures,
                "stats": {label: {k: v for k, v in asdict(s).items() if k != "failures"}
                          | {"failures": len(s.failures)} | self.clock.take(label) for label, s in stats.items()}}


def _answer(con):
    return lambda sql: con.sql(sql).arrow()


_HARNESSES: dict[tuple[str, ...], Harness] = {}


def run_task(configs: tuple[Config, ...], seed: int, start: int, count: int,
             deadline: float | None = None) -> dict:
    """One task of a campaign in this process (its harness built on the first task and kept)."""
    t0 = time.time()
    key = tuple((c.label, c.values) for c in configs)
    harness = _HARNESSES.get(key)
    built = 0.0
    if harness is None:
        harness = _HARNESSES[key] = Harness(list(configs))
        built = harness.seconds
    # What the process keeps (the harness, then each task's caches) out of later collections: the GPU
    # engine collects after a query that leaves device memory allocated, and a full collection walks
    # every tracked object; frozen after a collection, they are skipped (on the GPU stand-in of
    # scripts/host_only_gpu.py, 16 cases under 11 configurations took 13-15 s unfrozen, 1.2-2.5 s frozen).
    # FUZZ_FREEZE=0 leaves it out (to measure what it saves)
    if os.environ.get("FUZZ_FREEZE", "1") != "0":
        gc.collect()
        gc.freeze()
    result = harness.run(seed, start, count, deadline)
    result.update(device=configs[0].device, seed=seed, start=start, seconds=time.time() - t0, pid=os.getpid(),
                  harness_seconds=built)
    return result

