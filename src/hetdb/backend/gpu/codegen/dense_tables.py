"""Dense-key build tables of fused pipelines: ``rows[key - lo]`` is the build row holding ``key``
(``dense_build``: on the device, or, for a small build side, on the host), with the payload columns a
probe carries (by build row, or by key: ``keyed_payload``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb.errors import UnsupportedError

DENSE_MAX_SLOTS = 1 << 27     # 512 MiB of int32 row slots: beyond this a hash join is the better build
I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min


@dataclass
class DenseJoinTable:
    """Build side of a dense-key join: ``rows[key - lo]`` is the build row holding ``key`` or -1.
    ``payload`` arrays are indexed by build row (the original build columns)."""

    rows: Any
    lo: int
    size: int
    payload: list[Any] = field(default_factory=list)
    num_rows: int = 0
    payload_by_key: list[Any] = field(default_factory=list)  # keyed_payload's arrays, once made
    # (slot, build row) index arrays of the slots that hold a row, when the table was built on the
    # host (``dense_build`` of a small build side): keyed_payload then needs no mask on the device
    hits: tuple[Any, Any] | None = None
    forms: dict[str, Any] = field(default_factory=dict)  # probe_arrays' arrays, once made
    # a table planned on the host (``host_planned``): (rows, payload, hits, the upload), host arrays
    # put on the device with one upload at the first read of ``rows`` or ``payload``; a kernel
    # probing a narrow form (``forms``, made with the table) never reads them
    pending: tuple[Any, list[Any], tuple[Any, Any], Callable[[list[Any]], list[Any]]] | None = None

    @property
    def nbytes(self) -> int:
        if self.pending is not None:
            return 0  # (nothing of it on the device yet but its forms)
        return int(self.rows.nbytes)

    @property
    def payload_columns(self) -> int:
        """Number of payload columns (without putting a host-planned table's payload on the device)."""
        return len(self.pending[1]) if self.pending is not None else len(self.payload)

    def held_arrays(self) -> list[Any]:
        """Every array the table keeps (rows, payload, and those made from them at first use), for
        the device-memory accounting of a kept table (exec/fusion_reuse.py)."""
        # (a host build's (slot, row) index arrays: an allocation of their own when the table was
        # filled on the device, SCATTER_ON_DEVICE, else views of the one upload with ``rows``)
        if self.pending is not None:
            return [*self.forms.values()]
        return [self.rows, *self.payload, *self.payload_by_key, *self.forms.values(), *(self.hits or ())]

    def keyed_payload(self) -> list[Any]:
        """The payload arrays indexed by ``key - lo`` (a slot without a build row holds 0), for
        probes ``by_key``; made at the first call and kept with the table."""
        if len(self.payload_by_key) != len(self.payload):
            xp = _array_module(self.rows)
            out = []
            if self.hits is not None:  # (index arrays: scatters that need no wait for the device)
                slots, src = self.hits
                for p in self.payload:
                    a = xp.zeros(max(self.size, 1), dtype=p.dtype)
                    a[slots] = p[src]
                    out.append(a)
                self.payload_by_key = out
                return out
            rows = self.rows[:self.size]
            hit = rows >= 0
            for p in self.payload:
                a = xp.zeros(max(self.size, 1), dtype=p.dtype)
                if self.size and int(p.shape[0]):
                    # (a gather under a mask, not a masked assignment, whose nonzero waits for the device)
                    a[:self.size] = xp.where(hit, p[xp.maximum(rows, 0)], 0)
                out.append(a)
            self.payload_by_key = out
        return self.payload_by_key


    def probe_arrays(self, form: str, bound: int | None = None) -> Any:
        """The one array a probe in ``form`` (spec.DenseProbe.form) reads, made at the first call and
        kept with the table: "bits" a uint32 bitmap of the keys that have a build row (bit k % 32 of
        word k / 32 for key lo + k); "code8" / "code16" the one payload per key as int8 / int16, -1
        where no build row has the key (ValueError for a payload value outside 0 .. 2^7-1 / 2^15-1).
        ``bound``: the payload's values are known to lie in 0 .. bound - 1 (compacted ranks), so
        they are not checked on the device (a wait)."""
        got = self.forms.get(form)
        if got is not None:
            return got
        xp = _array_module(self.rows)
        hit = self.rows[:self.size] >= 0
        if form == "bits":
            words = max(1, -(-self.size // 32))
            padded = xp.zeros(words * 32, dtype=xp.uint32)
            padded[:self.size] = hit
            got = (padded.reshape(words, 32) << xp.arange(32, dtype=xp.uint32)).sum(axis=1, dtype=xp.uint32)
        elif form in ("code8", "code16"):
            if len(self.payload) != 1:
                raise ValueError(f"a {form} probe reads one payload, the table has {len(self.payload)}")
            dtype, top = (xp.int8, 1 << 7) if form == "code8" else (xp.int16, 1 << 15)
            values = self.payload[0]
            if bound is not None and bound > top:
                raise ValueError(f"payload values up to {bound - 1} do not fit a {form} probe")
            if bound is None and int(values.shape[0]) and bool(((values < 0) | (values >= top)).any()):
                raise ValueError(f"payload values outside 0..{top - 1} do not fit a {form} probe")
            got = xp.full(max(self.size, 1), -1, dtype=dtype)
            if self.hits is not None:  # (index arrays of the host build)
                slots, src = self.hits
                got[slots] = values[src].astype(dtype)
            elif self.size and int(values.shape[0]):
                rows = self.rows[:self.size]
                # (a gather under a mask, not a masked assignment, whose nonzero waits for the device)
                got[:self.size] = xp.where(hit, values[xp.maximum(rows, 0)].astype(dtype), -1)
        else:
            raise ValueError(f"unknown probe form {form!r}")
        self.forms[form] = got
        return got


def _rows(self: DenseJoinTable) -> Any:
    if self.pending is not None:
        self.upload_pending()
    return self._rows


def _set_rows(self: DenseJoinTable, rows: Any) -> None:
    self._rows = rows


def _payload(self: DenseJoinTable) -> list[Any]:
    if self.pending is not None:
        self.upload_pending()
    return self._payload


def _set_payload(self: DenseJoinTable, payload: list[Any]) -> None:
    self._payload = payload


def _upload_pending(self: DenseJoinTable) -> None:
    """A host-planned table's rows, payload and hits on the device, with one upload."""
    rows, payload, hits, to_device = self.pending
    if rows is None:  # (made only now: a narrow-form probe did not need them)
        rows = _rows_of(self.size, *hits)
    host = [i for i, p in enumerate(payload) if type(p) is np.ndarray]  # (others: device columns)
    up = to_device([rows, *(payload[i] for i in host), *hits])
    on_device = list(payload)
    for i, a in zip(host, up[1:1 + len(host)]):
        on_device[i] = a
    self.pending = None
    self._rows, self._payload, self.hits = up[0], on_device, (up[-2], up[-1])


# (properties over the dataclass fields: a host-planned table's arrays go up at their first read)
DenseJoinTable.rows = property(_rows, _set_rows)
DenseJoinTable.payload = property(_payload, _set_payload)
DenseJoinTable.upload_pending = _upload_pending


def host_planned(keys: np.ndarray, mask: np.ndarray | None, payload: list[Any],
                 forms_of: Callable[[DenseJoinTable], list[tuple[str, int | None]]],
                 extra: list[np.ndarray] = (), max_slots: int = DENSE_MAX_SLOTS,
                 to_device: Callable[[list[Any]], list[Any]] | None = None,
                 upload: Callable[[list[Any]], list[Any]] | None = None,
                 ) -> tuple[DenseJoinTable, list[Any]] | None:
    """``dense_build`` over host arrays (a dimension's filtered rows copied out once), with the probe
    arrays ``forms_of(table)`` names ((form, bound) as ``probe_arrays`` takes them) made on the host
    too (from ``payload``'s host arrays): the forms and ``extra`` host arrays go to the device with
    one upload (returned: the device copies of ``extra``); the table's rows, payload (host arrays,
    or device ones kept as they are) and hits stay on the host until something reads them
    (``DenseJoinTable.pending``; the rows are not even made before). ``to_device``:
    the upload (default one ``arrays_to_device``; ``list`` where the "device" is the host);
    ``upload``: that of the forms and ``extra`` (default ``to_device``; ``list``: the caller uploads
    them, with other tables', and sets ``forms``). None when the key range has more than
    HOST_BUILD_SLOTS slots; UnsupportedError as ``dense_build``."""
    to_device = to_device or _to_device
    upload = upload or to_device
    got = _host_slots(keys, mask, max_slots)
    if got is None:
        return None
    lo, size, slots, src = got
    n = int(slots.shape[0])
    # the forms straight from the slots (Numba loops, codegen/dense_host.py), a repeated key found by
    # the first of them; the rows only where no form is read (made at the upload otherwise:
    # ``_upload_pending``)
    rows = None
    wanted = forms_of(DenseJoinTable(None, lo, size, [], n))
    made, unique = {}, True
    for form, bound in wanted:
        made[form], ok = _loop_form(size, payload, slots, src, form, bound)
        unique = unique and ok
    if not wanted:
        from hetdb.backend.gpu.codegen.dense_host import fill_rows

        rows = np.full(max(size, 1), -1, dtype=np.int32)
        unique = fill_rows(rows, slots, src)
    if not unique:
        raise UnsupportedError("dense join build keys are not unique")
    up = upload([*made.values(), *extra]) if made or extra else []
    out = DenseJoinTable(rows, lo, size, [], n, forms=dict(zip(made, up[:len(made)])),
                         pending=(rows, list(payload), (slots, src), to_device))
    return out, up[len(made):]


def _host_slots(keys: np.ndarray, mask: np.ndarray | None,
                max_slots: int) -> tuple[int, int, np.ndarray, np.ndarray] | None:
    """(lo, size, slot per selected row, its row) of a host build side, as int32 arrays; None when
    the key range has more than HOST_BUILD_SLOTS slots (the device builds it then)."""
    if mask is None:
        ks, src = keys, None  # (every row: the rows are 0 .. n-1, no gather)
    else:
        src = np.flatnonzero(np.asarray(mask, dtype=bool)).astype(np.int32)
        ks = keys[src]
    n = int(ks.shape[0])
    if n == 0:
        return 0, 0, np.zeros(0, np.int32), np.zeros(0, np.int32)
    lo, hi = int(ks.min()), int(ks.max())
    size = hi - lo + 1
    if size > max_slots:
        raise UnsupportedError(f"dense join key range {lo}..{hi} is larger than {max_slots} slots")
    if size > HOST_BUILD_SLOTS:
        return None
    # (32-bit keys subtract in place: the differences are below HOST_BUILD_SLOTS)
    slots = (ks - ks.dtype.type(lo)).astype(np.int32) if ks.dtype.itemsize == 4 else \
        (ks.astype(np.int64) - lo).astype(np.int32)
    return lo, size, slots, np.arange(n, dtype=np.int32) if src is None else src


def _rows_of(size: int, slots: np.ndarray, src: np.ndarray) -> np.ndarray:
    """The table's rows (-1 where no row is; one slot at least) from its (slot, row) pairs."""
    rows = np.full(max(size, 1), -1, dtype=np.int32)
    rows[slots] = src
    return rows


def _code_form(form: str, payload: list[np.ndarray], bound: int | None) -> tuple[Any, np.ndarray]:
    """(dtype, the payload's values) of a "code8" / "code16" probe form of a host build; ValueError
    when the table has not exactly one payload or a value (below ``bound`` when the caller knows
    it, else checked here) does not fit the form's signed codes (-1 marks a missing key)."""
    if len(payload) != 1:
        raise ValueError(f"a {form} probe reads one payload, the table has {len(payload)}")
    dtype, top = (np.int8, 1 << 7) if form == "code8" else (np.int16, 1 << 15)
    values = payload[0]
    if bound is not None and bound > top:
        raise ValueError(f"payload values up to {bound - 1} do not fit a {form} probe")
    if bound is None and values.shape[0] and bool(((values < 0) | (values >= top)).any()):
        raise ValueError(f"payload values outside 0..{top - 1} do not fit a {form} probe")
    return dtype, values


def _loop_form(size: int, payload: list[np.ndarray], slots: np.ndarray, src: np.ndarray, form: str,
               bound: int | None) -> tuple[np.ndarray, bool]:
    """(``probe_arrays(form, bound)`` of a host build as a host array, no key repeated), by the
    loops of codegen/dense_host.py."""
    from hetdb.backend.gpu.codegen.dense_host import fill_bits, fill_codes

    if form == "bits":
        words = np.zeros(max(1, -(-size // 32)), dtype=np.uint32)
        return words, fill_bits(words, slots)
    if form in ("code8", "code16"):
        dtype, values = _code_form(form, payload, bound)
        got = np.full(max(size, 1), -1, dtype=dtype)
        return got, fill_codes(got, slots, src, values.astype(dtype, copy=False), src.shape[0] == values.shape[0])
    raise ValueError(f"unknown probe form {form!r}")


def dense_build(keys: Any, payload: list[Any] | None = None, mask: Any | None = None,
                max_slots: int = DENSE_MAX_SLOTS, host_rows: int = -1) -> DenseJoinTable:
    """Build over the rows of ``keys`` (int32/int64 array: CuPy, or NumPy for host-side planning
    tests) where ``mask`` (build-side filter). UnsupportedError when the key range exceeds
    ``max_slots`` or a selected key repeats (the executor then uses the hash join). Two waits for
    the device: the key range (with the row count) and the uniqueness verdict. A build side of at
    most ``host_rows`` rows (default HOST_BUILD_ROWS; a dimension's filtered rows) is built on the
    host instead: one copy of its keys (and mask) out, NumPy, one copy of the table in
    (``_host_build``)."""
    xp = _array_module(keys)
    keys = xp.asarray(keys)
    if keys.dtype.kind not in "iu":
        raise UnsupportedError(f"dense join keys must be integers, got {keys.dtype}")
    payload = [xp.ascontiguousarray(p) for p in (payload or [])]
    n = int(keys.shape[0])
    if n >= 1 << 31:
        raise UnsupportedError("dense join build side has more than 2**31 rows")
    if xp is not np and 0 < n <= (HOST_BUILD_ROWS if host_rows < 0 else host_rows):
        got = _host_build(_host(keys), None if mask is None else _host(mask), max_slots)
        if got is not None:
            table, hits = got
            if not SCATTER_ON_DEVICE:
                rows, slots, src = _to_device([table.rows, *hits])
                return DenseJoinTable(rows, table.lo, table.size, payload, table.num_rows, hits=(slots, src))
            # only the filled slots go up (int32: a table has at most HOST_BUILD_SLOTS slots, a side at
            # most HOST_BUILD_ROWS rows); the table is filled on the device (SCATTER_ON_DEVICE)
            slots, src = _to_device([hits[0].astype(np.int32), hits[1].astype(np.int32)])
            rows = xp.full(int(table.rows.shape[0]), -1, dtype=xp.int32)
            if int(slots.shape[0]):
                rows[slots] = src
            return DenseJoinTable(rows, table.lo, table.size, payload, table.num_rows, hits=(slots, src))
    k = keys.astype(xp.int64)
    if n and mask is not None:
        mask = xp.asarray(mask, dtype=bool)
        lo_hi = xp.stack([xp.where(mask, k, I64_MAX).min(), xp.where(mask, k, I64_MIN).max(),
                          mask.sum(dtype=xp.int64)])
    elif n:
        lo_hi = xp.stack([k.min(), k.max(), xp.asarray(n, dtype=xp.int64)])
    else:
        return DenseJoinTable(xp.full(1, -1, dtype=xp.int32), 0, 0, payload, 0)
    lo, hi, count = (int(v) for v in _host(lo_hi))
    if count == 0:
        return DenseJoinTable(xp.full(1, -1, dtype=xp.int32), 0, 0, payload, 0)
    size = hi - lo + 1
    if size > max_slots:
        raise UnsupportedError(f"dense join key range {lo}..{hi} is larger than {max_slots} slots")
    # rows left out by the mask write to one extra slot past the table, so no compaction is needed
    target = k - lo
    if mask is not None:
        target = xp.where(mask, target, size)
    rows = xp.full(size + 1, -1, dtype=xp.int32)
    idx = xp.arange(n, dtype=xp.int32)
    rows[target] = idx
    lost = rows[target] != idx  # a key that repeats: only one of its rows won the slot
    if mask is not None:
        lost &= mask
    if bool(lost.any()):
        raise UnsupportedError("dense join build keys are not unique")
    return DenseJoinTable(rows[:size], lo, size, payload, count)


def _host(a: Any) -> Any:
    return a.get() if hasattr(a, "get") else np.asarray(a)


# dense_build builds a side of at most this many rows on the host when its key range has at most
# HOST_BUILD_SLOTS slots: a device build costs ~10 launches and two waits whatever its size (SSB's
# dimension builds on the H100 at SF 2: ~0.9 ms each, most of the fused pipeline's planning)
HOST_BUILD_ROWS = 1 << 16
HOST_BUILD_SLOTS = 1 << 20
# True: a table built on the host goes to the device as its filled slots (slot, build row) only, scattered
# into a table of -1 there (a fill and a scatter), not as the whole table (SSB SF 20's part table: 1M
# slots, 40k rows, a 4.6 MB upload beside a warm scan's copies, 1.4-2.3 ms of a busy link). Off by
# default: on the H100 (s17 checkpoint 3, SSB SF 20 warm, same process) the whole upload was faster
# (geomean 20.74 against 21.46 ms; q2.1 21.8 against 23.5, q4.1 28.8 against 29.6).
SCATTER_ON_DEVICE = False


def _host_build(keys: np.ndarray, mask: np.ndarray | None,
                max_slots: int) -> tuple[DenseJoinTable, tuple[np.ndarray, np.ndarray]] | None:
    """``dense_build`` over host arrays, with the (slot, build row) pairs of its filled slots (int32);
    None when the key range has more than HOST_BUILD_SLOTS slots (the device builds it then)."""
    got = _host_slots(keys, mask, max_slots)
    if got is None:
        return None
    lo, size, slots, src = got
    n = int(slots.shape[0])
    from hetdb.backend.gpu.codegen.dense_host import fill_rows

    rows = np.full(max(size, 1), -1, dtype=np.int32)
    if not fill_rows(rows, slots, src):  # (a key that repeats: its second row finds its slot filled)
        raise UnsupportedError("dense join build keys are not unique")
    return DenseJoinTable(rows, lo, size, [], n), (slots, src)



def _to_device(arrays: list[np.ndarray]) -> list[Any]:
    from hetdb.backend.gpu.codegen.runtime import arrays_to_device

    return arrays_to_device(arrays)


def _array_module(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy


def domain_of(values: Any) -> tuple[int, int]:
    """(min, max) of an integer device array: a dense group-key domain (empty -> (0, 0))."""
    if values.shape[0] == 0:
        return 0, 0
    return int(values.min()), int(values.max())
