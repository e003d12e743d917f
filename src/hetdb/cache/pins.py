"""User pins: keep chosen columns of a table resident in one tier, whatever the placement policy says.

``con.pin(table, columns=None, tier="gpu"|"host")`` loads every page of those columns of the table's
committed version into the tier and marks them kept: never evicted, counted against the tier's
budget like any entry; a pin that does not fit next to what is already pinned fails with
``PinError`` before anything is loaded (and loads nothing if the budget refuses midway).
``con.unpin(...)`` makes them ordinary entries again (evictable by benefit).

Tiers per connection kind:

    GPU connection, tier="gpu"   the connection's DevicePageCache (within gpu_memory_limit's cache share)
    GPU connection, tier="host"  the process-wide pinned host tier (host_cache_limit)
    CPU connection, tier="host"  the connection's decoded host page cache, which CPU scans read through
                                 (a quarter of host_memory_limit)
    CPU connection, tier="gpu"   an error: there is no GPU

A pin is of the version committed when it was made: a later commit's pages are new pages, not
pinned (pin again); the old version's pages stay kept until unpinned. Pins in a connection's own
tiers end with its engine (``SET`` of an option that rebuilds it, ``close``); pins in the shared host
tier are released at ``close``.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hetdb.cache.base import PageKey
from hetdb.errors import HetdbError, OutOfMemoryError

TIERS = ("gpu", "host")


class PinError(OutOfMemoryError):
    """A pin that does not fit in its tier."""


@dataclass
class _Pinned:
    """The kept keys of one (tier, table), per column, and the tier object holding them."""

    tier: Any
    columns: dict[str, list] = field(default_factory=dict)
    nbytes: dict[str, int] = field(default_factory=dict)


_REGISTRY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # connection -> {(tier, table): _Pinned}
_LOCK = threading.Lock()


def _pins_of(con: Any) -> dict:
    with _LOCK:
        return _REGISTRY.setdefault(con, {})


def _columns(reader: Any, columns: Any) -> list[str]:
    if columns is None:
        return [c.name for c in reader.schema]
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    out = []
    for c in columns:
        out.append(reader.column(c).name)  # CatalogError naming an unknown column
    if not out:
        raise HetdbError("pin: columns is empty; leave it out to pin every column")
    return out


def _check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise HetdbError(f"unknown tier {tier!r}: pin to tier='gpu' or tier='host'")
    return tier


def pin(con: Any, table: str, columns: Any = None, tier: str = "gpu") -> dict:
    """Load ``columns`` (default all) of ``table`` into ``tier`` and keep them there; returns
    {table, tier, columns, pages, bytes} of what this call pinned."""
    _check_tier(tier)
    engine = con._get_engine()
    reader = con.db.table(table)
    names = _columns(reader, columns)
    device = getattr(engine, "device", None)
    if tier == "gpu":
        if device is None:
            raise HetdbError("tier='gpu': this connection runs on the CPU (no GPU visible to CuPy, or "
                             "device='cpu'); pin to tier='host' instead")
        holder, per_column = device.cache, _pin_gpu(device, engine.options, reader, names)
    elif device is not None:
        holder = device.host_tier(engine.options)
        if holder is None:
            raise HetdbError("tier='host': the pinned host tier is off (host_cache_limit=0)")
        per_column = _pin_pinned_host(holder, reader, names)
    else:
        holder = engine.host_cache
        if holder is None:
            raise HetdbError("tier='host': this connection has no host page cache")
        per_column = _pin_decoded_host(holder, reader, names)
    pins = _pins_of(con)
    entry = pins.get((tier, reader.name))
    if entry is None or entry.tier is not holder:
        entry = pins[(tier, reader.name)] = _Pinned(holder)
    for name, (keys, nbytes) in per_column.items():
        entry.columns.setdefault(name, [])
        entry.columns[name] += [k for k in keys if k not in set(entry.columns[name])]
        entry.nbytes[name] = entry.nbytes.get(name, 0) + nbytes
    return {"table": reader.name, "tier": tier, "columns": names,
            "pages": sum(len(k) for k, _ in per_column.values()),
            "bytes": sum(n for _, n in per_column.values())}


def unpin(con: Any, table: str, columns: Any = None, tier: str | None = None) -> int:
    """Release the pins of ``table`` (``columns`` of it; in ``tier``, or both); the pages stay cached
    as ordinary entries. Returns the number of pages released."""
    if tier is not None:
        _check_tier(tier)
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    pins = _pins_of(con)
    released = 0
    for (t, name), entry in list(pins.items()):
        if (tier is not None and t != tier) or name.lower() != table.lower():
            continue
        for column in [c for c in entry.columns if columns is None or c in columns]:
            for key in entry.columns.pop(column):
                entry.tier.unkeep(key)
                released += 1
            entry.nbytes.pop(column, None)
        if not entry.columns:
            del pins[(t, name)]
    return released


def release_all(con: Any) -> None:
    """Release every pin of ``con`` (at close: the shared host tier outlives the connection)."""
    with _LOCK:
        pins = _REGISTRY.pop(con, {})
    for entry in pins.values():
        for keys in entry.columns.values():
            for key in keys:
                entry.tier.unkeep(key)


def pinned(con: Any) -> list[tuple[str, str, str, int, int]]:
    """(tier, table, column, pages, bytes) of every pin of ``con``."""
    return [(tier, table, column, len(keys), entry.nbytes.get(column, 0))
            for (tier, table), entry in sorted(_pins_of(con).items())
            for column, keys in sorted(entry.columns.items())]


# ---- loading into each tier -----------------------------------------------------------------------------
def _too_big(what: str, need: int, free: int, capacity: int, hint: str) -> PinError:
    return PinError(f"pinning {what} needs {need:,} bytes but only {free:,} of the tier's {capacity:,} bytes "
                    f"are not pinned already; {hint}")


class _Kept:
    """What a pin has kept so far in one tier (keys and bytes per column); if the pin fails, every
    key is released again before the error leaves (``with _Kept(tier, names) as kept``)."""

    def __init__(self, tier: Any, names: list[str]) -> None:
        self.tier = tier
        self.keys: dict[str, list] = {c: [] for c in names}
        self.sizes = dict.fromkeys(names, 0)

    def add(self, column: str, key: Any, nbytes: int = 0) -> None:
        self.keys[column].append(key)
        self.sizes[column] += nbytes

    def __enter__(self) -> _Kept:
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> bool:
        if kind is not None:
            for ks in self.keys.values():
                for key in ks:
                    self.tier.unkeep(key)
        return False

    def result(self) -> dict:
        return {c: (self.keys[c], self.sizes[c]) for c in self.keys}


def _pin_gpu(device: Any, options: Any, reader: Any, names: list[str]) -> dict:
    from hetdb.backend.gpu.stream import PageStreamer, device_page_bytes, page_codec, page_layout

    cache = device.cache
    need = 0
    for c in names:
        for rg in range(reader.num_row_groups):
            _, sections = page_layout(reader, c, rg)
            need += device_page_bytes(reader, c, rg, reader.page_location(c, rg), sections,
                                      reader.row_group_rows(rg), page_codec(reader, c, rg))
    free = cache.capacity_bytes - cache.kept_bytes()
    what = f"columns {', '.join(names)} of table '{reader.name}' on the GPU"
    hint = ("raise gpu_memory_limit (the page cache may hold half of it), pin fewer columns, "
            "unpin others, or pin to tier='host'")
    if need > free:
        raise _too_big(what, need, free, cache.capacity_bytes, hint)
    with _Kept(cache, names) as kept:
        with PageStreamer(reader, names, budget=device.budget, cache=cache,
                          host_cache=device.host_tier(options), keep=True) as streamer:
            for rg, batch in streamer:
                for c in names:
                    key = PageKey(reader.name, reader.version, c, rg)
                    if key not in cache:
                        raise _too_big(what, need, cache.capacity_bytes - cache.kept_bytes(),
                                       cache.capacity_bytes, "query work holds the rest of gpu_memory_limit; " + hint)
                    cache.keep(key)
                    kept.add(c, key, _device_nbytes(batch.columns[c]))
        for c in names:
            dkey = PageKey.dictionary(reader.name, reader.version, c)
            if dkey in cache:
                cache.keep(dkey)
                kept.add(c, dkey)
    return kept.result()


def _device_nbytes(col: Any) -> int:
    return col.held_nbytes()


def _pin_pinned_host(host: Any, reader: Any, names: list[str]) -> dict:
    from hetdb.io import read_verified

    pages = [(c, rg, reader.page_location(c, rg)) for c in names for rg in range(reader.num_row_groups)]
    need = sum(host.blocks_for(loc.padded_length) for _, _, loc in pages) * host.block_bytes
    free = host.capacity_bytes - host.kept_bytes()
    what = f"columns {', '.join(names)} of table '{reader.name}' in pinned host memory"
    hint = "raise host_cache_limit, pin fewer columns or unpin others"
    if need > free:
        raise _too_big(what, need, free, host.capacity_bytes, hint)
    with _Kept(host, names) as kept:
        for c, rg, loc in pages:
            key = PageKey(reader.path, reader.version, c, rg)
            page = host.lookup(key, loc, pin=True)
            if page is None:
                blocks = host.acquire(key, loc.length, loc.padded_length, loc.checksum, force=True)
                if blocks is None:
                    raise _too_big(what, need, host.capacity_bytes - host.kept_bytes(), host.capacity_bytes,
                                   "pages in use by running scans hold the rest; " + hint)
                try:
                    read_verified(loc.path, loc.offset, blocks.runs, loc.length, loc.checksum,
                                  f"table '{reader.name}' column '{c}' file {loc.path} page {rg}")
                except BaseException:
                    host.abort(blocks)
                    raise
                page = host.commit(blocks)
            host.keep(key)
            host.unpin_page(page)
            kept.add(c, key, host.blocks_for(loc.padded_length) * host.block_bytes)
    return kept.result()


def _pin_decoded_host(cache: Any, reader: Any, names: list[str]) -> dict:
    what = f"columns {', '.join(names)} of table '{reader.name}' in the host page cache"
    with _Kept(cache, names) as kept:
        for c in names:
            for rg in range(reader.num_row_groups):
                before = cache.kept_bytes()
                try:
                    cache.read(reader, c, rg, keep=True)
                except OutOfMemoryError as e:
                    raise PinError(f"pinning {what}: {e}") from None
                kept.add(c, (reader.path, c, rg), cache.kept_bytes() - before)
            dkey = (reader.path, c, -1)
            if cache.is_kept(dkey):
                kept.add(c, dkey)
    return kept.result()


# ---- what each tier holds ---------------------------------------------------------------------------------
def cache_contents(con: Any) -> pa.Table:
    """One row per (tier, table, column): pages and bytes each tier holds, and how many are pinned."""
    engine = con._get_engine()
    names: dict[str, str] = {}
    for t in con.db.tables():
        try:
            names[con.db.table(t).path] = t
        except HetdbError:
            continue
    rows: dict[tuple, list[int]] = {}

    def add(tier: str, table: str, column: str, nbytes: int, kept: bool) -> None:
        r = rows.setdefault((tier, table, column), [0, 0, 0, 0])
        r[0] += 1
        r[1] += nbytes
        r[2] += kept
        r[3] += nbytes if kept else 0

    device = getattr(engine, "device", None)
    if device is not None:
        for key, nbytes, kept in device.cache.entries():
            if isinstance(key, PageKey):
                add("gpu", key.table, key.column, nbytes, kept)
            else:
                add("gpu", "(fused kernel state)", "", nbytes, kept)
        host = device.host_tier(engine.options)
        if host is not None:
            for key, nbytes, kept in host.entries():
                add("host", names.get(key.table, key.table), key.column, nbytes, kept)
    elif getattr(engine, "host_cache", None) is not None:
        for (path, column, _rg), nbytes, kept in engine.host_cache.entries():
            add("host", names.get(path, path), column, nbytes, kept)
    keys = sorted(rows)
    return pa.table({
        "tier": [k[0] for k in keys], "table": [k[1] for k in keys], "column": [k[2] for k in keys],
        "pages": pa.array([rows[k][0] for k in keys], pa.int64()),
        "bytes": pa.array([rows[k][1] for k in keys], pa.int64()),
        "pinned_pages": pa.array([rows[k][2] for k in keys], pa.int64()),
        "pinned_bytes": pa.array([rows[k][3] for k in keys], pa.int64()),
    })
