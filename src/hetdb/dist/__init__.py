"""Distributed queries on Ray workers (``hetdb.connect(path, workers=N)``): docs/distributed.md."""

from typing import Any

from hetdb.errors import HetdbError

# Connection options of the distributed runtime (the engines of the workers do not read them).
DIST_OPTIONS = ("shuffle_compression", "worker_hosts", "worker_retries", "worker_timeout", "worker_gpus",
                "exchange")


def pop_dist_options(options: dict[str, Any], distributed: bool) -> dict[str, Any]:
    """Removes the distributed runtime's options from a connection's ``options`` and returns them;
    a HetdbError where they are given to a connection without workers."""
    found = {k: options.pop(k) for k in DIST_OPTIONS if k in options}
    if found and not distributed:
        raise HetdbError(f"{', '.join(found)}: option(s) of distributed queries; connect with workers=N "
                         f"or cluster=...")
    return found
