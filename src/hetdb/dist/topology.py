"""Workers grouped by host, and the routes of a two-level hash exchange.

With workers on several hosts a repartition goes in two levels (as in NVIDIA's distributed join):
a worker first sends, to each worker of its own host, the rows of every destination that worker
relays; the relay then sends one message per destination on another host. A destination's relay on
host ``h`` is the worker of ``h`` with the same local index (modulo the size of ``h``); on its own
host a destination relays for itself, so rows for the own host cross one level only. Messages between
two hosts drop from |h| x |h'| to |h'|: fewer and larger."""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.errors import HetdbError


@dataclass(frozen=True)
class Topology:
    hosts: tuple[int, ...]  # the host of each worker (labels 0..H-1 in order of first appearance)

    @classmethod
    def of(cls, labels: list) -> Topology:
        seen: dict = {}
        return cls(tuple(seen.setdefault(x, len(seen)) for x in labels))

    @property
    def workers(self) -> int:
        return len(self.hosts)

    @property
    def two_level(self) -> bool:
        return len(set(self.hosts)) > 1

    def members(self, host: int) -> list[int]:
        return [w for w, h in enumerate(self.hosts) if h == host]

    def local_index(self, w: int) -> int:
        return self.members(self.hosts[w]).index(w)

    def relay(self, host: int, dest: int) -> int:
        """The worker of ``host`` that forwards rows for worker ``dest``."""
        if self.hosts[dest] == host:
            return dest
        peers = self.members(host)
        return peers[self.local_index(dest) % len(peers)]

    def relayed_by(self, p: int) -> list[int]:
        """The destinations worker ``p`` relays for (itself first among them, in worker order)."""
        return [d for d in range(self.workers) if self.relay(self.hosts[p], d) == p]

    def same_host(self, a: int, b: int) -> bool:
        return self.hosts[a] == self.hosts[b]


def parse_worker_hosts(value, workers: int) -> list[int] | None:
    """The ``worker_hosts`` connection option: one logical host label per worker (a placement option
    for tests and for clusters whose node ids do not tell the hosts apart)."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != workers or \
            not all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in value):
        raise HetdbError(f"worker_hosts must list one host label (int or str) per worker ({workers}), "
                         f"not {value!r}")
    return list(value)
