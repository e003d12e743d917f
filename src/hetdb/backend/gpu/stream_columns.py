"""The Columns a batched delivery hands out (``PageStreamer.deliveries()``, stream_batch.py; mixed
into ``BatchedDelivery``): views of the delivery's buffer (values, validity, plain strings, pages
kept encoded), a page's own copy for the device cache (paged deliveries), pages left in the pinned
host tier (zero-copy), and plain-string pages in a string codec (LZ4 chunks, encoded offsets) copied
as stored and decoded on the device, the chunks of every page of a column in one nvCOMP call where
it can."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu.stream_pages import _delivered, _Page, zero_copy_address
from hetdb.column import Batch, Column


class DeliveryColumns:
    """A batched delivery's Columns (see the module docstring)."""

    def _paged_column(self, spec: Any, page: _Page, a: dict[str, Any], string: bool) -> Column:
        """``_column`` of a paged delivery: a device-cache hit as cached; a page the cache admitted
        gets its own copy of its arrays (device to device, on the copy stream) that the cache keeps,
        pinned until the step is done; a page left in the host tier (``zero_copy``) is an encoded
        column over its pinned bytes, which the kernel reads in place."""
        if page.cached:
            return _delivered(page.value)
        if page.zero_copy:
            from hetdb.backend.gpu.memory import host_view

            data = host_view(zero_copy_address(page), int(page.sections["data"][1]), page.host)
            return self._column(spec, page, {"encoded": data}, False)
        if not page.admitted:
            return self._column(spec, page, a, string)
        col = self._column(spec, page, {name: arr.copy() for name, arr in a.items()}, string)
        self.cache.put(page.key, col, page.device_bytes, pin=True, reserved=True,
                       link_bytes=page.location.length, first_reuse=self._first_reuse())
        page.cached, page.admitted = True, None
        return _delivered(col)

    def _paged_batches(self, rgs: list[Any], ids: tuple[int, ...], specs: list[Any], arrays: list[Any],
                       strings: tuple[bool, ...], coded: tuple[bool, ...], raws: dict[int, list[Any]]) -> list[Batch]:
        """A paged delivery's Batches: one per row group ``rgs[r]`` (row group ``ids[r]``), a Column per
        page (``_paged_column`` over ``arrays[c][r]``; a page in a string codec ``_paged_coded`` of
        ``raws[c][r]``)."""
        return [Batch({name: self._paged_coded(rg.pages[c], raws[c][r]) if coded[c]
                       else self._paged_column(spec, rg.pages[c], arrays[c][r], strings[c])
                       for c, (name, spec) in enumerate(zip(self.columns, specs))},
                      self.reader.row_group_rows(ids[r]))
                for r, rg in enumerate(rgs)]

    def _column(self, spec: Any, page: _Page, a: dict[str, Any], string: bool) -> Column:
        """A delivered Column over its arrays in the delivery's buffer: plain strings (offsets +
        chars), a page kept encoded (an EncodedColumn the kernel decodes in place), or values
        (dictionary codes with the column's device dictionary)."""
        if string:
            return Column(spec.dtype, validity=a.get("validity"), offsets=a["offsets"], chars=a["chars"])
        dictionary = self._dictionary(page.column) if page.encoding == "dict" else None
        if "encoded" in a:
            from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn

            dpage = DevicePage(a["encoded"], page.codec, page.num_rows, np.dtype(spec.dtype.numpy_dtype))
            return EncodedColumn(spec.dtype, validity=a.get("validity"), dictionary=dictionary, device_page=dpage)
        return Column(spec.dtype, data=a["data"], validity=a.get("validity"), dictionary=dictionary)

    def _coded_column(self, pages: list[_Page], raws: list[Any]) -> Column:
        """One string column of a delivery from pages in a string codec, copied as stored into one
        device buffer: LZ4 pages' characters all decompressed by one nvCOMP call
        (``strings_codec.decode_string_pages``), else each page decoded on its own (``_decode``)
        and the pages' arrays concatenated."""
        from hetdb.backend.gpu.batch_plan import _up
        from hetdb.backend.gpu.strings_codec import concat_strings, decode_string_pages

        cp = self._cupy
        # each page's bytes start 256-byte aligned (batch_plan's ALIGN): its sections are read as 4- and
        # 8-byte words (a page after one of odd length was misaligned: CUDA_ERROR_MISALIGNED_ADDRESS)
        starts = np.cumsum([0] + [_up(p.location.length) for p in pages])
        buf = cp.empty(max(int(starts[-1]), 1), dtype=cp.uint8)
        parts = []
        for p, got, off in zip(pages, raws, starts.tolist()):
            raw = buf[off:off + p.location.length]
            parts.append((p, raw, self._copy_stored(p, got, raw)))
        where = f"table '{self.reader.name}' column '{pages[0].column}' page"  # (as _decode names a page)
        joined = decode_string_pages(buf, [(raw, p.sections, p.num_rows, p.codec, f"{where} {p.row_group}", runs)
                                           for p, raw, runs in parts])
        if joined is None:
            return concat_strings([self._decode(p, raw, runs) for p, raw, runs in parts])
        valid = [self._validity(p, raw) for p, raw, _ in parts]
        validity = None
        if any(v is not None for v in valid):
            validity = cp.concatenate([cp.ones(p.num_rows, dtype=cp.bool_) if v is None else v
                                       for v, (p, _, _) in zip(valid, parts)])
        offsets, chars = joined
        return Column(self.reader.column(pages[0].column).dtype, validity=validity, offsets=offsets, chars=chars)

    def _paged_coded(self, page: _Page, got: Any) -> Column:
        """A string-codec page of a paged delivery: a device-cache hit as cached, else decoded on
        its own (``_decode_stored``); the cache keeps it when it admitted it."""
        if page.cached:
            return _delivered(page.value)
        col = self._decode_stored(page, got)
        if not page.admitted:
            return col
        self.cache.put(page.key, col, page.device_bytes, pin=True, reserved=True,
                       link_bytes=page.location.length, first_reuse=self._first_reuse())
        page.cached, page.admitted = True, None
        return _delivered(col)

    def _decode_stored(self, page: _Page, got: Any) -> Column:
        """A page in a string codec copied as stored (``got``: a ring slice or a pinned host-tier
        page) and decoded on the device (``_decode``: nvCOMP for LZ4 chunks)."""
        raw = self._cupy.empty(page.location.length, dtype=self._cupy.uint8)
        return self._decode(page, raw, self._copy_stored(page, got, raw))

    def _copy_stored(self, page: _Page, got: Any, raw: Any) -> list[np.ndarray]:
        """Queue the copy of the page's stored bytes (``got``) into device ``raw``; the host runs
        they come from."""
        from hetdb.backend.gpu.stream_io import _copy_runs

        if isinstance(got, np.ndarray):
            raw.set(got[:page.location.length], stream=self._copy_stream)
            return [got]
        _copy_runs(raw, got.runs, page.location.length, self._copy_stream)
        return got.runs

