"""Running fuzz campaigns: random queries vs DuckDB plus TLP/NoREC oracles on hetdb itself.

A campaign is (seed, first case, number of cases); case ``i`` is drawn from its own seeds
(``case_generator``: the shape its family of ``FAMILY`` cases shares, values of its own), so any
failing case replays alone. Errors: when both engines raise, the case agrees
only if both errors are of the same kind (overflow, division by zero, conversion); hetdb must raise a
typed ``HetdbError``. A run-time error on one side and an empty answer on the other also agree (the
engine that answered never had to evaluate the failing expression), and so do a run-time error of
DuckDB and an answer of hetdb equal to DuckDB's with its filters evaluated where the query writes them
(DuckDB had evaluated a filter on rows the query's joins never produce). A query DuckDB refuses for any
other reason is a generator slip: it is counted as skipped, and callers assert that skips stay rare.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from diff_check import describe, mismatch
from diff_fuzzgen import Query, case_generator
from diff_oracles import Oracle, combine, draw_oracle

from hetdb.errors import HetdbError

ORACLE_SHARE = 0.4  # share of cases that are metamorphic oracles (the rest: plain differential)


def error_kind(e: BaseException) -> str:
    """overflow | division by zero | conversion | other, from either engine's exception. A failed
    cast is a conversion whatever its cause (DuckDB says "Conversion Error: ... out of range" or
    "Conversion Error: Failed to cast decimal value" for the same kind of value)."""
    text = f"{type(e).__name__} {e}".lower()
    if "conversion error" in text or "could not convert" in text or "could not cast" in text:
        return "conversion"
    if "out of range" in text or "overflow" in text or "outofrange" in text:
        return "overflow"
    if "division by zero" in text or "divide by zero" in text:
        return "division by zero"
    if "conversion" in text:
        return "conversion"
    return "other"


def use_reference_without_statistics_propagation(duck) -> None:
    """DuckDB 2.0's statistics propagation answers wrongly on fuzz queries: in
    ``SELECT k, sum(v) FROM fb WHERE (id > (SELECT max(k) FROM fc WHERE k >= 300)) IS NULL GROUP BY k
    HAVING sum(v) < 20`` it drops the HAVING filter (14 groups instead of 6, sums of 973 kept) and with
    an ORDER BY fails to cast the sum to INT8. The reference runs without that pass."""
    duck.execute(f"SET disabled_optimizers = '{WITHOUT_STATISTICS_PROPAGATION}'")


WITHOUT_STATISTICS_PROPAGATION = "statistics_propagation"
# DuckDB's passes that move a filter to other rows (below a join, into a scan, with the joins
# reordered): off, DuckDB evaluates each filter on the rows the query writes it over
IN_WRITTEN_ORDER = ",".join((WITHOUT_STATISTICS_PROPAGATION, "filter_pushdown", "join_order",
                             "build_side_probe_side", "join_filter_pushdown"))


def reference_in_written_order(duck, sql: str) -> Answer:
    """DuckDB's answer with its filters evaluated where the query writes them (IN_WRITTEN_ORDER),
    the reference restored after."""
    try:
        duck.execute(f"SET disabled_optimizers = '{IN_WRITTEN_ORDER}'")
        return Answer(duck.sql(sql).to_arrow_table())
    except Exception as e:  # every DuckDB error is data here
        return Answer(error=e)
    finally:
        use_reference_without_statistics_propagation(duck)


@dataclass
class Answer:
    table: pa.Table | None = None
    error: BaseException | None = None

    @property
    def kind(self) -> str:
        return error_kind(self.error) if self.error is not None else "ok"


@dataclass
class FuzzStats:
    cases: int = 0
    differential: int = 0        # hetdb answers compared with DuckDB's (agreed errors included)
    oracle_checks: int = 0       # TLP/NoREC checks whose parts all answered and were compared
    oracle_queries: int = 0      # hetdb statements (partitions, NoREC references) of those checks
    hetdb_queries: int = 0       # statements hetdb ran
    errors_agreed: int = 0       # both engines raised errors of the same kind
    skipped: int = 0             # DuckDB refused the query (a generator slip)
    nonempty: int = 0            # differential answers with at least one row
    by_oracle: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def compared(self) -> int:
        """hetdb answers that were checked: against DuckDB's, or as parts of a metamorphic oracle."""
        return self.differential + self.oracle_queries

    def add(self, other: FuzzStats) -> None:
        for name in ("cases", "differential", "oracle_checks", "oracle_queries", "hetdb_queries",
                     "errors_agreed", "skipped", "nonempty"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k, v in other.by_oracle.items():
            self.by_oracle[k] = self.by_oracle.get(k, 0) + v
        self.failures += other.failures

    def summary(self) -> str:
        return (f"{self.cases} cases, {self.compared} answers checked: {self.differential} compared with "
                f"DuckDB ({self.nonempty} non-empty, {self.errors_agreed} agreed errors), "
                f"{self.oracle_queries} in {self.oracle_checks} oracle checks {self.by_oracle}, "
                f"{self.hetdb_queries} hetdb statements, {self.skipped} skipped, "
                f"{len(self.failures)} failures")


class FuzzRunner:
    """Runs fuzz cases on one hetdb connection (``run_hetdb``) against one DuckDB (``duck``)."""

    def __init__(self, label: str, run_hetdb: Callable[[str], pa.Table], duck, samples: dict,
                 allow: frozenset[str] = frozenset(), reference_cache: dict | None = None, variant: str = ""):
        self.label = label
        self.variant = variant  # whose values a case draws (case_generator); "" the plain stream
        self.run_hetdb = run_hetdb
        self.duck = duck
        self.samples = samples
        self.allow = allow
        self.cache = reference_cache if reference_cache is not None else {}
        use_reference_without_statistics_propagation(duck)

    # ---- the engines ---------------------------------------------------------------------------------
    def reference(self, sql: str) -> Answer:
        answer = self.cache.get(sql)
        if answer is None:
            try:
                answer = Answer(self.duck.sql(sql).to_arrow_table())
            except Exception as e:  # every DuckDB error is data here: its kind decides
                answer = Answer(error=e)
            self.cache[sql] = answer
        return answer

    def hetdb(self, sql: str, stats: FuzzStats) -> Answer:
        stats.hetdb_queries += 1
        try:
            return Answer(self.run_hetdb(sql))
        except Exception as e:  # classified by the caller: untyped errors are failures
            return Answer(error=e)

    # ---- cases -------------------------------------------------------------------------------------
    def run(self, seed: int, count: int, start: int = 0, stop_at_first: bool = False) -> FuzzStats:
        stats = FuzzStats()
        for index in range(start, start + count):
            try:
                self.run_case(seed, index, stats)
            except Exception as e:  # the harness itself failed: report the case, go on with the next
                tb = "".join(traceback.format_exception(e)[-4:])
                stats.failures.append(f"--- {self.label} seed={seed} case={index}: harness error "
                                      f"{type(e).__name__}: {e}\n{tb}")
            if stop_at_first and stats.failures:
                break
        return stats

    def draw(self, seed: int, index: int) -> Query | Oracle:
        gen = case_generator(seed, index, self.samples, self.allow, self.variant)
        return draw_oracle(gen) if gen.chance(ORACLE_SHARE) else gen.query()

    def run_case(self, seed: int, index: int, stats: FuzzStats) -> None:
        stats.cases += 1
        case = self.draw(seed, index)
        where = f"{self.label} seed={seed} case={index}"
        query = case.base if isinstance(case, Oracle) else case
        outcome = self.differential(where, query, stats)
        if outcome is None or not isinstance(case, Oracle):
            return
        failure = self.check_oracle(where, case, outcome, stats)
        if failure:
            stats.failures.append(failure)

    def differential(self, where: str, query: Query, stats: FuzzStats) -> pa.Table | None:
        """Compare one query with DuckDB; returns hetdb's answer when both answered and agree."""
        truth = self.reference(query.sql)
        if truth.error is not None and truth.kind == "other":
            stats.skipped += 1
            return None
        got = self.hetdb(query.sql, stats)
        failure = self.judge(where, query, got, truth)
        if failure:
            stats.failures.append(failure)
            return None
        stats.differential += 1
        if truth.error is not None:
            stats.errors_agreed += 1
            return None
        stats.nonempty += truth.table.num_rows > 0
        return got.table

    def judge(self, where: str, query: Query, got: Answer, truth: Answer) -> str | None:
        if got.error is not None and not isinstance(got.error, HetdbError):
            tb = "".join(traceback.format_exception(got.error)[-6:])
            crash = f"hetdb crashed with {type(got.error).__name__}: {got.error}\n{tb}"
            return describe(where, query.sql, crash)
        if truth.error is not None or got.error is not None:
            if got.kind == truth.kind or self.evaluation_skipped(got, truth):
                return None
            if self.evaluated_elsewhere(query, got, truth):
                return None
            said = {"hetdb": got, "DuckDB": truth}
            text = "; ".join(f"{k} {'answered' if a.error is None else f'raised [{a.kind}] {a.error}'}"
                             for k, a in said.items())
            return describe(where, query.sql, f"error mismatch: {text}",
                            got.table, truth.table)
        diff = mismatch(got.table, truth.table, query.ordering, query.tolerances or 1e-9)
        return describe(where, query.sql, diff, got.table, truth.table) if diff else None

    @staticmethod
    def evaluation_skipped(got: Answer, truth: Answer) -> bool:
        """One engine raised a run-time error, the other answered with no rows: it proved (from
        statistics or a filter it ran first) that nothing reaches the output and never evaluated the
        failing expression (an overflow, a division by zero, a failed cast). SQL leaves that order to
        the engine (DuckDB prunes
        ``... WHERE x <= 20 HAVING max(x) > 35`` before evaluating ``max(x // k)``). Both raised
        run-time errors of different kinds: which failing expression is evaluated first is the
        engine's choice too."""
        runtime = ("overflow", "division by zero", "conversion")
        if got.kind in runtime and truth.kind in runtime:
            return True
        answered = got if got.error is None else truth
        raised = truth if got.error is None else got
        return raised.kind in runtime and answered.table is not None and answered.table.num_rows == 0

    def evaluated_elsewhere(self, query: Query, got: Answer, truth: Answer) -> bool:
        """hetdb answered and DuckDB raised a run-time error in a filter it had moved onto rows the
        query does not evaluate it over (pushed below a join whose output is empty: ``count(*) FROM
        fe JOIN fa ... WHERE CAST(fa.f AS DECIMAL(18,2)) >= 2`` casts fa's inf though fe is empty):
        they agree when DuckDB, filtering where the query writes it, gives hetdb's answer (an
        evaluation order SQL leaves to the engine; hetdb with its pushdown on raises there too)."""
        if got.error is not None or truth.kind not in ("overflow", "division by zero", "conversion"):
            return False
        again = reference_in_written_order(self.duck, query.sql)
        return again.error is None and not mismatch(got.table, again.table, query.ordering,
                                                    query.tolerances or 1e-9)

    def check_oracle(self, where: str, oracle: Oracle, whole: pa.Table, stats: FuzzStats) -> str | None:
        answers = []
        for sql in oracle.parts:
            got = self.hetdb(sql, stats)
            if got.error is not None:
                truth = self.reference(sql)  # an error is fine only where DuckDB raises one too
                agree = truth.kind == got.kind or self.evaluation_skipped(got, truth)
                if agree and isinstance(got.error, HetdbError):
                    stats.errors_agreed += 1
                    return None
                return describe(f"{where} [{oracle.kind}]", sql,
                                f"partition raised {type(got.error).__name__}: {got.error} "
                                f"(DuckDB: {'answered' if truth.error is None else truth.error})")
            answers.append(got.table)
        try:
            parts = combine(oracle, answers, whole)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            return describe(f"{where} [{oracle.kind}]", oracle.base.sql, f"parts do not combine: {e}")
        diff = mismatch(parts, whole, None, oracle.base.tolerances or 1e-9)
        if diff:
            text = "\n".join([oracle.base.sql, "partitions:", *oracle.parts])
            return describe(f"{where} [{oracle.kind}] hetdb disagrees with itself", text,
                            f"partitions combined vs whole: {diff}", parts, whole)
        stats.oracle_checks += 1
        stats.oracle_queries += len(oracle.parts)
        stats.by_oracle[oracle.kind] = stats.by_oracle.get(oracle.kind, 0) + 1
        return None
