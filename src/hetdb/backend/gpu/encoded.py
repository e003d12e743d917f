"""Compressed pages kept compressed in device memory (connection option ``gpu_compressed_cache``).

A ``DevicePage`` is a page's encoded data section (codec header + body, docs/storage-format.md) in
device memory: what the device page cache holds instead of a decoded value array. Generated kernels
read it in place (kernels/pipeline.cuh ``ForColumn``/``DictColumn``/``ConstColumn``, the delta/rle tile
loaders, fused_pipeline.cuh ``BlockLoadSelPage``), so a hot query reads the compressed bytes.

An ``EncodedColumn`` is a device Column whose values are such a page: validity (unpacked, one byte
per row) and the dictionary of string codes are as in any Column, and ``data`` decodes the page at
first use (decode.cu) for every consumer that is not a generated kernel (operator-at-a-time paths).
Code that must not decode (kernels' argument marshalling, cache accounting) looks at
``device_page`` (``getattr(col, "device_page", None)`` works on every Column).

Nothing here imports CuPy at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.codec.encodings import CODEC_IDS
from hetdb.column import Column
from hetdb.types import DataType

# Codecs a generated kernel decodes in place (every encoding hetdb writes; plain pages are arrays).
KERNEL_CODECS = tuple(CODEC_IDS)


@dataclass(frozen=True)
class DevicePage:
    """``data``: CuPy uint8 array of the encoded data section; ``codec`` its encoding; ``n`` rows;
    ``dtype`` the physical NumPy dtype the values decode to."""

    data: Any
    codec: str
    n: int
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def decode(self) -> Any:
        from hetdb.backend.gpu.decode import decode_device

        return decode_device(self.data, self.codec, self.n, self.dtype)


class EncodedColumn(Column):
    """A device Column over a ``DevicePage`` (see the module docstring). ``data`` decodes once per
    object: the device cache keeps one object and hands each scan a ``fresh`` one, so a decoded copy
    lives only as long as the batch that needed it, never in the cache."""

    def __init__(self, dtype: DataType, data: Any = None, validity: Any = None, dictionary: Column | None = None,
                 offsets: Any = None, chars: Any = None, device_page: DevicePage | None = None) -> None:
        self._decoded = data
        self.device_page = device_page
        super().__init__(dtype, data, validity, dictionary, offsets, chars)

    @property  # type: ignore[override]
    def data(self) -> Any:
        if self._decoded is None and self.device_page is not None:
            self._decoded = self.device_page.decode()
        return self._decoded

    @data.setter
    def data(self, value: Any) -> None:
        self._decoded = value

    def __len__(self) -> int:
        return self.device_page.n if self.device_page is not None else super().__len__()

    def __repr__(self) -> str:
        page = self.device_page
        what = f"{page.codec}, {page.n} rows, {page.nbytes} bytes" if page is not None else "decoded"
        return f"EncodedColumn({self.dtype}, {what})"

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def fresh(self) -> EncodedColumn:
        """A new object over the same page (and validity, dictionary) with nothing decoded yet."""
        return EncodedColumn(self.dtype, validity=self.validity, dictionary=self.dictionary,
                             device_page=self.device_page)

    def held_arrays(self) -> list[Any]:
        """The device arrays this object holds now (the encoded section, the validity, a decoded
        copy if one was made), without decoding: what cache accounting counts."""
        return [a for a in (self.device_page.data if self.device_page is not None else None,
                            self._decoded, self.validity, self.offsets, self.chars) if a is not None]

    @property
    def device_nbytes(self) -> int:
        """Device bytes of the page as cached: the encoded section and the unpacked validity."""
        return self.device_page.nbytes + (0 if self.validity is None else int(self.validity.nbytes))


def page_codec_of(col: Any) -> str:
    """The codec a generated kernel reads ``col`` in: that of its device page, else "plain"."""
    page = getattr(col, "device_page", None)
    return "plain" if page is None else page.codec
