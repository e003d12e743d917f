"""encodings.endpoints (a page's first and last value without decoding it: what the GPU string-page
path checks on the host instead of reading decoded offsets back) and strings_codec.host_bytes (a
section out of the pinned runs a page was copied from)."""

from __future__ import annotations

import numpy as np
import pytest
from codec_cases import ENCODED, cases, width_blocks

from hetdb.backend.gpu.strings_codec import host_bytes
from hetdb.codec import strings as sc
from hetdb.codec.encodings import FOR, CodecError, encode_as, endpoints


def test_endpoints_of_every_encoding_match_the_values() -> None:
    every = {**cases(), "widths_0_64": width_blocks(1, 333), "offsets": np.cumsum(np.arange(5000, dtype=np.int64))}
    checked = 0
    for name, values in sorted(every.items()):
        if values.dtype != np.int64:
            continue
        for enc in ENCODED:
            try:
                buf = encode_as(values, enc)
            except ValueError:
                continue
            assert endpoints(buf, enc, values.shape[0]) == (int(values[0]), int(values[-1])), f"{enc} on {name}"
            checked += 1
    assert checked >= 5 * 8


def test_endpoints_refuse_a_header_that_does_not_match() -> None:
    buf = encode_as(np.arange(3000, dtype=np.int64), FOR)
    with pytest.raises(CodecError, match="header"):
        endpoints(buf, FOR, 2999)
    with pytest.raises(CodecError, match="header"):
        endpoints(buf, "delta", 3000)
    with pytest.raises(CodecError):
        endpoints(buf[:40], FOR, 3000)  # truncated: the directory is cut


def test_string_offsets_section_endpoints_are_zero_and_the_character_count() -> None:
    offsets = np.concatenate(([0], np.cumsum(np.random.default_rng(3).integers(0, 40, 7000)))).astype(np.int64)
    section = sc.encode_offsets(offsets)
    assert endpoints(section, sc.offsets_codec(section), offsets.shape[0]) == (0, int(offsets[-1]))


def test_host_bytes_reads_across_runs() -> None:
    page = np.arange(1000, dtype=np.int64).astype(np.uint8)
    runs = [page[:100], page[100:101], page[101:640], page[640:]]
    for off, ln in ((0, 1000), (0, 100), (99, 3), (100, 1), (150, 400), (639, 361), (999, 1), (500, 0)):
        got = host_bytes(runs, off, ln)
        assert got.dtype == np.uint8 and np.array_equal(got, page[off:off + ln]), (off, ln)
    assert np.shares_memory(host_bytes(runs, 200, 50), page)  # inside one run: a view
