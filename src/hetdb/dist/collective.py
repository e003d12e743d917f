"""Communicators of collective exchanges: ``all_to_all(sends) -> received``, called by every worker of
a group for the same exchanges in the same order (``sends[p]``: the uint8 buffer for worker p or None;
the result holds what each worker sent to this one, its own entry being ``sends[rank]``).

- ``nccl.NcclExchange``: GPUs, grouped NCCL send/recv of device buffers;
- ``MailboxMember``: CPU workers of a Ray cluster, through one small Ray actor per group (the same
  collective calls as NCCL's, so the GPU workers' exchange path runs on CPU workers in tests);
- ``LocalGroup``: several ranks in one process (threads), for running the exchange path without Ray."""

from __future__ import annotations

import threading
from typing import Any, Protocol


class Communicator(Protocol):
    workers: int
    rank: int

    def all_to_all(self, sends: list[Any]) -> list[Any]: ...

    def close(self) -> None: ...


class LocalGroup:
    """``workers`` ranks in one process; each rank's thread calls ``member(rank).all_to_all``."""

    def __init__(self, workers: int):
        self.workers = workers
        self._barrier = threading.Barrier(workers)
        self._slots: list[list[Any] | None] = [None] * workers

    def member(self, rank: int) -> LocalMember:
        return LocalMember(self, rank)


class LocalMember:
    def __init__(self, group: LocalGroup, rank: int):
        self.group, self.workers, self.rank = group, group.workers, rank

    def all_to_all(self, sends: list[Any]) -> list[Any]:
        g = self.group
        g._slots[self.rank] = list(sends)
        g._barrier.wait()
        got = [g._slots[p][self.rank] for p in range(self.workers)]
        g._barrier.wait()  # nobody overwrites a slot before every rank took its buffers
        return got

    def close(self) -> None:
        self.group._barrier.abort()


class Mailbox:
    """A Ray actor (async) through which a group of CPU workers exchanges buffers: round r's call of
    every rank returns once all ranks posted theirs."""

    def __init__(self, workers: int):
        self.workers = workers
        self.rounds: dict[int, dict] = {}

    async def exchange(self, round_: int, rank: int, sends: list[Any]) -> list[Any]:
        import asyncio

        slot = self.rounds.setdefault(round_, {"sends": {}, "ready": asyncio.Event(), "taken": 0})
        slot["sends"][rank] = sends
        if len(slot["sends"]) == self.workers:
            slot["ready"].set()
        await slot["ready"].wait()
        got = [slot["sends"][p][rank] for p in range(self.workers)]
        slot["taken"] += 1
        if slot["taken"] == self.workers:
            del self.rounds[round_]
        return got


def start_mailbox(workers: int) -> Any:
    import ray

    return ray.remote(num_cpus=0, max_concurrency=max(8, 2 * workers))(Mailbox).remote(workers)


class MailboxMember:
    """Rank ``rank`` of the group served by the Ray actor ``mailbox``."""

    def __init__(self, mailbox: Any, workers: int, rank: int):
        self.mailbox, self.workers, self.rank = mailbox, workers, rank
        self._round = 0

    def all_to_all(self, sends: list[Any]) -> list[Any]:
        import ray

        self._round += 1
        out = [None if p == self.rank else s for p, s in enumerate(sends)]  # its own rows stay here
        got = ray.get(self.mailbox.exchange.remote(self._round, self.rank, out))
        got[self.rank] = sends[self.rank]
        return got

    def close(self) -> None:
        self.mailbox = None
