"""Decoded or compressed: which columns the GPU page cache keeps decoded when not all of them fit so.

When a database's pages, decoded, do not fit in the device cache, its pages stay compressed there
(option ``gpu_compressed_cache`` "auto", exec/device.py ``keep_compressed``) and the fused kernels
decode them as they read them. That decode costs a hot scan several times a plain read (s14 on the
H100, scripts/gpu_decode_scan.py: FOR 4.7-6.0x, dictionary 6.6x, RLE 8.8-10x a plain scan of the same
rows), while the compressed working set often leaves room: SSB SF 20 at a 50% budget holds its 1.7 GB
of referenced columns compressed in a 3.5 GB cache. The room goes to the columns whose decoding costs
the most scan time per extra byte held, weighted by how often queries read them:

    benefit(c) = weight(c) * decoded_bytes(c) * DECODE_COST[codec(c)]   (plain-scan time units)
    cost(c)    = decoded_bytes(c) - stored_bytes(c)                      (extra bytes, decoded)

taken greedily by benefit / cost until the room (the cache's capacity less kept entries, less the
stored bytes of every column read recently, less a margin for what a query holds beside them) is
spent (a knapsack's greedy by ratio: GreedyDual-Size's cost per byte, Cao & Irani 1997, applied to a
column's form instead of its presence). ``weight`` counts the queries that read a column, decayed by
``DECAY`` per query, so the working set of recent queries decides; the current choice stays, with what
else fits added, unless the best choice's columns that it lacks save ``HYSTERESIS`` times what the
columns it would turn compressed save (a mix of queries whose weights move a little with each one
does not flip columns back and forth: each flip copies them again).

Pure Python and GPU-free: the device (exec/device.py) records each query's columns and asks for the
set; scans then decode those columns' pages on arrival (backend/gpu/stream.py ``decoded``) and the
kernels' variants read them as value arrays (codegen/runtime.py ``FusedPipeline.variant``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

# Extra scan time of a decoded byte read from a compressed page, in units of a plain read of it
# (s14 H100 decode-in-scan microbenchmark minus the plain read; delta as FOR plus a prefix sum)
DECODE_COST = {"plain": 0.0, "const": 0.0, "for": 4.0, "dict": 5.5, "delta": 6.0, "rle": 8.5}
DECAY = 0.9          # weight kept per query that does not read a column
MIN_WEIGHT = 0.05    # below it a column counts as no longer read (its stored bytes leave the room's sum)
HYSTERESIS = 1.25    # a new choice must save this many times the current one's benefit
MARGIN = 0.05        # share of the room kept free (rounding of pool blocks, dictionaries, page tables)


@dataclass(frozen=True)
class ColumnForm:
    """One column of a table version as the device cache may hold it: ``stored`` device bytes kept
    compressed, ``decoded`` kept decoded, ``cost`` DECODE_COST of its pages (bytes-weighted)."""

    key: Hashable
    stored: int
    decoded: int
    cost: float

    @property
    def extra(self) -> int:
        return max(0, self.decoded - self.stored)


def column_cost(codec_bytes: dict[str, int]) -> float:
    """DECODE_COST of a column whose pages hold ``codec_bytes`` decoded bytes per codec."""
    total = sum(codec_bytes.values())
    if total <= 0:
        return 0.0
    return sum(DECODE_COST.get(codec, max(DECODE_COST.values())) * n for codec, n in codec_bytes.items()) / total


class DecodedPlacement:
    """Per-column reference weights and the current choice of columns kept decoded."""

    def __init__(self, decay: float = DECAY, hysteresis: float = HYSTERESIS) -> None:
        self.decay = float(decay)
        self.hysteresis = float(hysteresis)
        self.queries = 0
        self._weight: dict[Hashable, tuple[float, int]] = {}  # key -> (weight, query it was set at)
        self.decoded: frozenset = frozenset()
        self.changes = 0  # times the choice changed (tests, probes)

    def weight(self, key: Hashable) -> float:
        got = self._weight.get(key)
        if got is None:
            return 0.0
        w, at = got
        return w * self.decay ** (self.queries - at)

    def known(self) -> list[Hashable]:
        """The columns with a weight (read by some query not long ago)."""
        return list(self._weight)

    def record(self, keys: Iterable[Hashable]) -> bool:
        """One query reads the columns ``keys``; whether one of them had no weight before."""
        self.queries += 1
        now = self.queries
        new = False
        for key in set(keys):
            old = self.weight(key)
            new = new or old < MIN_WEIGHT
            self._weight[key] = (old + 1.0, now)
        if len(self._weight) > 4096:  # (forget columns nobody reads any more)
            self._weight = {k: v for k, v in self._weight.items() if self.weight(k) >= MIN_WEIGHT}
        return new

    def benefit(self, form: ColumnForm) -> float:
        return self.weight(form.key) * form.decoded * form.cost

    def best(self, forms: Iterable[ColumnForm], capacity: int,
             keep: frozenset = frozenset()) -> tuple[frozenset, float] | None:
        """(columns to keep decoded, their benefit) within ``capacity`` bytes of the cache: every
        column read lately (weight at least MIN_WEIGHT) takes its stored bytes, the rest of the
        room (less MARGIN) goes to decoding, the columns of ``keep`` first (None when they do not
        fit), then the best benefit per extra byte."""
        live = [f for f in forms if self.weight(f.key) >= MIN_WEIGHT]
        room = int((capacity - sum(f.stored for f in live)) * (1.0 - MARGIN))
        chosen, total = [], 0.0
        order = sorted(live, key=lambda f: (f.key not in keep, -self.benefit(f) / max(1, f.extra), str(f.key)))
        for f in order:
            gain = self.benefit(f)
            if gain <= 0.0 and f.key not in keep:
                continue
            if f.extra <= room:
                room -= f.extra
                chosen.append(f.key)
                total += gain
            elif f.key in keep:
                return None
        return frozenset(chosen), total

    def choose(self, forms: list[ColumnForm], capacity: int) -> frozenset:
        """The columns to keep decoded now: the current choice with what else fits added, unless
        ``best`` differs from that by columns saving HYSTERESIS times what the columns it turns
        compressed save (each flip copies those again: it must pay off)."""
        want, _ = self.best(forms, capacity)
        kept = self.best(forms, capacity, keep=frozenset(self.decoded) & {f.key for f in forms
                                                                        if self.weight(f.key) >= MIN_WEIGHT})
        if kept is not None:
            by_key = {f.key: f for f in forms}
            gained = sum(self.benefit(by_key[k]) for k in want - kept[0])
            lost = sum(self.benefit(by_key[k]) for k in kept[0] - want)
            if not gained > self.hysteresis * lost:
                want = kept[0]
        if want != self.decoded:
            self.decoded = want
            self.changes += 1
        return self.decoded
