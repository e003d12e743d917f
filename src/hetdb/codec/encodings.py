"""Lightweight encodings of one page's fixed-width values, and the per-page choice among them.

Every encoded (non-plain) data section starts with a 16-byte header::

    uint8 codec id, uint8 value bytes (1, 4 or 8), uint16 0, uint32 n, int64 parameter

followed by the codec's body (every part 8-byte aligned; BP = ``bitpack`` stream):

    const   (none)                          parameter = the value
    for     BP(n values)
    delta   int64 base[nb], BP(n deltas)    delta j = v[j] - v[j-1] inside a block, 0 at a block's
                                            first value; base[b] = the block's first value
    rle     BP(R run values), int64 start[nbR], BP(R run lengths)   parameter = R; nbR = blocks of
                                            R runs; start[b] = first row of run-block b's first run, so
                                            a run's end = start of its block + lengths up to it
    dict    int64 values[K] (sorted), BP(n codes)  parameter = K

Values are integers of the physical width: int32 (INTEGER, DATE, dictionary string codes) and
int64 (BIGINT, TIMESTAMP, DECIMAL as scaled int64) sign-extended to int64, BOOLEAN bytes, and
FLOAT64 *bit patterns* (an int64 view, so every encoding is bit-exact: NaN payloads, -0.0,
infinities). Arithmetic wraps at 64 bits, so int64 extremes round-trip.

``plain`` has no header: the data section is the raw value array, exactly as in format version 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetdb.codec import bitpack
from hetdb.codec.bitpack import BLOCK

PLAIN = "plain"
CONST = "const"
FOR = "for"
DELTA = "delta"
RLE = "rle"
DICT = "dict"
# Candidate order = decode cost, cheapest first: a size tie goes to the earlier one.
CODECS = (CONST, PLAIN, FOR, DICT, DELTA, RLE)
CODEC_IDS = {CONST: 1, FOR: 2, DELTA: 3, RLE: 4, DICT: 5}
HEADER = 16
# Integer dictionaries are tried only when the distinct values estimated from a sample of the page
# make a dictionary page at most DICT_TRY_SLACK times the size of the FOR page.
DICT_SAMPLE = 8192
DICT_TRY_SLACK = 1.25
MAX_DICT_VALUES = 1 << 16


class CodecError(ValueError):
    """An encoded data section is inconsistent (the reader turns it into CorruptDataError)."""


def as_int64(values: np.ndarray) -> np.ndarray:
    """The int64 image the encodings work on (sign-extended ints, bool bytes, float bit patterns)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.float64:
        return values.view(np.int64)
    if values.dtype == np.bool_:
        return values.view(np.uint8).astype(np.int64)
    return values.astype(np.int64, copy=False)


@njit(cache=True, nogil=True)
def _runs(v: np.ndarray) -> int:
    runs = 1
    for j in range(1, v.shape[0]):
        if v[j] != v[j - 1]:
            runs += 1
    return runs


@njit(cache=True, nogil=True)
def _run_values_ends(v: np.ndarray, runs: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.empty(runs, np.int64)
    ends = np.empty(runs, np.int64)
    r = 0
    values[0] = v[0]
    for j in range(1, v.shape[0]):
        if v[j] != v[j - 1]:
            ends[r] = j
            r += 1
            values[r] = v[j]
    ends[r] = v.shape[0]
    return values, ends


@njit(cache=True, nogil=True, inline="always")
def _block_deltas_one(v: np.ndarray, b: int, d: np.ndarray) -> None:
    start = b * BLOCK
    d[start] = 0
    for j in range(start + 1, min(v.shape[0], start + BLOCK)):
        d[j] = v[j] - v[j - 1]


@njit(cache=True, nogil=True)
def _block_deltas_serial(v: np.ndarray, d: np.ndarray) -> None:
    for b in range((v.shape[0] + BLOCK - 1) // BLOCK):
        _block_deltas_one(v, b, d)


def _block_deltas(v: np.ndarray) -> np.ndarray:
    d = np.empty(v.shape[0], np.int64)
    _block_deltas_serial(v, d)
    return d


def _header(codec: str, itemsize: int, n: int, param: int) -> np.ndarray:
    h = np.zeros(HEADER, np.uint8)
    h[0] = CODEC_IDS[codec]
    h[1] = itemsize
    h[4:8] = np.frombuffer(np.uint32(n).tobytes(), np.uint8)
    h[8:16] = np.frombuffer(np.int64(param).tobytes(), np.uint8)
    return h


def _candidates(v: np.ndarray, itemsize: int, codecs: tuple[str, ...], force: bool) -> dict:
    """{codec: (encoded size, builder of the bytes)} for the codecs of ``codecs`` that apply to ``v``
    (``force``: skip the cheap pre-checks that keep hopeless RLE and dictionary attempts short)."""
    n = int(v.shape[0])
    out: dict = {}
    refs, widths = bitpack.block_params(v)
    if CONST in codecs and refs.min() == refs.max() and not widths.any():
        out[CONST] = (HEADER, lambda: _header(CONST, itemsize, n, int(v[0])))
    if FOR in codecs:
        out[FOR] = (HEADER + bitpack.stream_size(widths),
                    lambda: np.concatenate([_header(FOR, itemsize, n, 0), bitpack.pack(v, refs, widths)]))
    if DELTA in codecs:
        d = _block_deltas(v)
        d_refs, d_widths = bitpack.block_params(d)
        out[DELTA] = (HEADER + 8 * int(refs.shape[0]) + bitpack.stream_size(d_widths),
                      lambda: np.concatenate([_header(DELTA, itemsize, n, 0), v[::BLOCK].copy().view(np.uint8),
                                              bitpack.pack(d, d_refs, d_widths)]))
    if RLE in codecs:
        runs = _runs(v)
        if force or runs * 2 <= n:
            rv, re = _run_values_ends(v, runs)
            starts = np.concatenate(([0], re[:-1]))
            lengths = re - starts
            rv_p, rl_p = bitpack.block_params(rv), bitpack.block_params(lengths)
            out[RLE] = (HEADER + bitpack.stream_size(rv_p[1]) + 8 * int(rv_p[0].shape[0])
                        + bitpack.stream_size(rl_p[1]),
                        lambda: np.concatenate([_header(RLE, itemsize, n, runs), bitpack.pack(rv, *rv_p),
                                                starts[::BLOCK].copy().view(np.uint8),
                                                bitpack.pack(lengths, *rl_p)]))
    if DICT in codecs and (force or _dict_may_win(v, widths)):
        uniq = np.unique(v)
        if uniq.shape[0] <= MAX_DICT_VALUES:
            codes = _dict_codes(v, uniq)
            c_p = bitpack.block_params(codes)
            out[DICT] = (HEADER + 8 * int(uniq.shape[0]) + bitpack.stream_size(c_p[1]),
                         lambda: np.concatenate([_header(DICT, itemsize, n, int(uniq.shape[0])),
                                                 uniq.view(np.uint8), bitpack.pack(codes, *c_p)]))
    return out


_LUT_SPAN = 1 << 22  # a value range up to this maps through a lookup table (4M int32 = 16 MB)


def _dict_codes(v: np.ndarray, uniq: np.ndarray) -> np.ndarray:
    """The position of each value of ``v`` (int64) in its sorted distinct values ``uniq`` (int64). A narrow
    value range maps through a table indexed by value - lowest (O(n); a binary search of every value
    was a quarter of a wide table's import); a wide one binary-searches."""
    lo, hi = int(uniq[0]), int(uniq[-1])
    if hi - lo < _LUT_SPAN:  # every value of v lies in [lo, hi]: v - lo cannot overflow
        lut = np.zeros(hi - lo + 1, np.int32)
        lut[uniq - lo] = np.arange(uniq.shape[0], dtype=np.int32)
        return lut[v - lo].astype(np.int64)
    return np.searchsorted(uniq, v).astype(np.int64)


def _dict_may_win(v: np.ndarray, widths: np.ndarray) -> bool:
    """Whether a dictionary may be smaller than FOR (so the sort of the whole page is worth it): the
    page's distinct values, estimated from a strided sample, as int64 values plus a code per row, at
    most ``DICT_TRY_SLACK`` times FOR's bits. (A fixed cap on the sample's distinct values missed
    columns like SSB's lo_supplycost: 12,939 values, 14-bit codes against 17-bit FOR.)"""
    n = int(v.shape[0])
    step = max(1, n // DICT_SAMPLE)
    sample = v[::step]
    k = len(np.unique(sample))
    estimate = k if step == 1 else estimate_distinct(k, int(sample.shape[0]))
    if estimate > MAX_DICT_VALUES:
        return False
    dict_bits = 64 * estimate + n * (estimate - 1).bit_length()
    for_bits = 8 * bitpack.stream_size(widths)
    return dict_bits <= DICT_TRY_SLACK * for_bits


def estimate_distinct(k: int, s: int) -> int:
    """Distinct values of a page whose uniform sample of ``s`` values has ``k`` distinct: the ``D``
    with ``D * (1 - exp(-s / D)) = k`` (expected distinct values of ``s`` draws from ``D``); above
    ``MAX_DICT_VALUES`` it returns ``MAX_DICT_VALUES + 1``."""
    def expected(d: float) -> float:
        return d * -np.expm1(-s / d)

    hi = float(MAX_DICT_VALUES + 1)
    if k >= expected(hi):
        return MAX_DICT_VALUES + 1
    lo = float(k)
    while hi - lo > 0.5:
        mid = (lo + hi) / 2
        if expected(mid) < k:
            lo = mid
        else:
            hi = mid
    return int(np.ceil(hi))


def _encodable(values: np.ndarray) -> bool:
    return 0 < values.shape[0] < 1 << 32 and values.dtype.itemsize in (1, 4, 8)


def encode(values: np.ndarray, codecs: tuple[str, ...] = CODECS) -> tuple[np.ndarray, str]:
    """The smallest encoding of ``values`` among ``codecs`` and plain (a size tie goes to the cheaper
    decode): (data section bytes, codec name)."""
    plain = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
    if not _encodable(values):
        return plain, PLAIN
    candidates = _candidates(as_int64(values), values.dtype.itemsize, codecs, force=False)
    candidates[PLAIN] = (plain.shape[0], lambda: plain)
    best = min((c for c in CODECS if c in candidates), key=lambda c: candidates[c][0])
    size, build = candidates[best]
    out = build()
    if out.shape[0] != size:
        raise AssertionError(f"{best}: encoded {out.shape[0]} bytes, predicted {size}")
    return out, best


def encode_as(values: np.ndarray, codec: str) -> np.ndarray:
    """``values`` in ``codec`` even where another encoding is smaller (tests, decode benchmarks);
    ValueError when the codec cannot hold them (const of unequal values, a dictionary over 65536
    values, an empty or over-long page)."""
    if codec == PLAIN:
        return np.ascontiguousarray(values).view(np.uint8).reshape(-1)
    if not _encodable(values):
        raise ValueError(f"{codec} needs 1 to 2**32-1 values of 1, 4 or 8 bytes")
    candidates = _candidates(as_int64(values), values.dtype.itemsize, (codec,), force=True)
    if codec not in candidates:
        raise ValueError(f"{codec} cannot encode these values")
    return candidates[codec][1]()


# ---- decoding ----------------------------------------------------------------------------------

RLE_STORE = 8
# One Numba function per codec decodes a whole page: one scratch block per page, no per-block
# allocation or Python (per-block temporaries made RLE 0.5 and dictionaries 1.4 GB/s on one core).

@njit(cache=True, nogil=True)
def _delta_decode(bases, directory, words, n, out) -> None:
    d = np.empty(BLOCK, np.int64)
    for b in range((n + BLOCK - 1) // BLOCK):
        count = min(BLOCK, n - b * BLOCK)
        bitpack.unpack_block(directory, words, b, count, d, 0)
        acc = bases[b]
        start = b * BLOCK
        for j in range(count):
            acc += d[j]
            out[start + j] = acc


@njit(cache=True, nogil=True)
def _rle_decode(vdir, vwords, starts, ldir, lwords, runs, out) -> bool:
    """Runs r (value, length) fill ``out`` in order; False when a block's recorded start is not where
    the runs before it end, a length is negative, or the runs do not end exactly at ``len(out)``."""
    n = out.shape[0]
    values = np.empty(BLOCK, np.int64)
    lengths = np.empty(BLOCK, np.int64)
    pos = 0
    for b in range((runs + BLOCK - 1) // BLOCK):
        count = min(BLOCK, runs - b * BLOCK)
        if starts[b] != pos:
            return False
        bitpack.unpack_block(vdir, vwords, b, count, values, 0)
        bitpack.unpack_block(ldir, lwords, b, count, lengths, 0)
        for r in range(count):
            end = pos + lengths[r]
            if end < pos or end > n:
                return False
            v = values[r]
            if end + RLE_STORE <= n:
                # blind stores of RLE_STORE values (one vector store), the next run overwrites what
                # passes this run's end: no branch on the (random) length of a short run
                j = pos
                while True:
                    for q in range(RLE_STORE):
                        out[j + q] = v
                    j += RLE_STORE
                    if j >= end:
                        break
            else:
                for j in range(pos, end):
                    out[j] = v
            pos = end
    return pos == n


@njit(cache=True, nogil=True)
def _dict_decode(values, directory, words, n, out) -> bool:
    """False when a code is outside the dictionary (such rows get the last entry)."""
    codes = np.empty(BLOCK, np.int64)
    last = np.uint64(values.shape[0] - 1)
    largest = np.uint64(0)
    for b in range((n + BLOCK - 1) // BLOCK):
        count = min(BLOCK, n - b * BLOCK)
        bitpack.unpack_block(directory, words, b, count, codes, 0)
        start = b * BLOCK
        for j in range(count):
            code = np.uint64(codes[j])  # a negative code is a huge unsigned one
            largest = max(largest, code)
            out[start + j] = values[min(code, last)]
    return largest <= last


def decode_into(buf: np.ndarray, codec: str, n: int, out: np.ndarray) -> None:
    """Decode data section ``buf`` (uint8) of ``codec`` holding ``n`` values into ``out`` (an integer
    view of the destination array); CodecError when the bytes are inconsistent."""
    if codec == PLAIN:
        if buf.shape[0] != out.nbytes:
            raise CodecError("plain data section size does not match the value count")
        out.view(np.uint8)[:] = buf
        return
    if codec not in CODEC_IDS:
        raise CodecError(f"unknown encoding {codec!r}")
    if buf.shape[0] < HEADER or buf[0] != CODEC_IDS[codec] or buf[1] != out.dtype.itemsize \
            or int(buf[4:8].view(np.uint32)[0]) != n:
        raise CodecError(f"{codec} header does not match the page (codec, width or value count)")
    param = int(buf[8:16].view(np.int64)[0])
    body = buf[HEADER:]
    try:
        if codec == CONST:
            out[:] = param
        elif codec == FOR:
            directory, words, _ = bitpack.split(body, n)
            bitpack.unpack_into(directory, words, n, out)
        elif codec == DELTA:
            nb = bitpack.num_blocks(n)
            if body.shape[0] < 8 * nb:
                raise CodecError("delta block bases are truncated")
            directory, words, _ = bitpack.split(body[8 * nb:], n)
            _delta_decode(body[:8 * nb].view(np.int64), directory, words, n, out)
        elif codec == RLE:
            if not 0 < param <= n:
                raise CodecError("run count out of range")
            d1, w1, size = bitpack.split(body, param)
            nb = bitpack.num_blocks(param)
            if body.shape[0] < size + 8 * nb:
                raise CodecError("run-block starts are truncated")
            d2, w2, _ = bitpack.split(body[size + 8 * nb:], param)
            if not _rle_decode(d1, w1, body[size:size + 8 * nb].view(np.int64), d2, w2, param, out):
                raise CodecError("run ends are inconsistent")
        else:
            if not 0 < param <= MAX_DICT_VALUES or body.shape[0] < 8 * param:
                raise CodecError("dictionary size out of range")
            values = body[:8 * param].view(np.int64)
            directory, words, _ = bitpack.split(body[8 * param:], n)
            if not _dict_decode(values, directory, words, n, out):
                raise CodecError("dictionary code out of range")
    except ValueError as e:
        if isinstance(e, CodecError):
            raise
        raise CodecError(f"{codec}: {e}") from None


def decode(buf: np.ndarray, codec: str, n: int, dtype: np.dtype) -> np.ndarray:
    """A new array of ``n`` values of ``dtype`` decoded from data section ``buf``."""
    dtype = np.dtype(dtype)
    out = np.empty(n, dtype)
    if dtype == np.float64:
        target = out.view(np.int64)
    elif dtype == np.bool_:
        target = out.view(np.uint8)
    else:
        target = out
    decode_into(buf, codec, n, target)
    return out


def _block_values(directory: np.ndarray, words: np.ndarray, n: int, b: int) -> np.ndarray:
    out = np.empty(min(BLOCK, n - b * BLOCK), np.int64)
    bitpack.unpack_block(directory, words, b, out.shape[0], out, 0)
    return out


def endpoints(buf: np.ndarray, codec: str, n: int) -> tuple[int, int]:
    """(first, last) of the ``n`` >= 1 int64 values of encoded data section ``buf`` without decoding
    the page (at most two blocks are unpacked): what a reader checks of a page it hands to a device
    to decode (string offsets: 0 and the character count). CodecError when the header does not
    match or the section is truncated."""
    if codec not in CODEC_IDS or n < 1 or buf.shape[0] < HEADER or buf[0] != CODEC_IDS[codec] \
            or buf[1] != 8 or int(buf[4:8].view(np.uint32)[0]) != n:
        raise CodecError(f"{codec} header does not match the section (codec, width or value count)")
    param = int(buf[8:16].view(np.int64)[0])
    body = buf[HEADER:]
    last_block = (n - 1) // BLOCK
    try:
        if codec == CONST:
            return param, param
        if codec == FOR:
            directory, words, _ = bitpack.split(body, n)
            return (int(_block_values(directory, words, n, 0)[0]),
                    int(_block_values(directory, words, n, last_block)[-1]))
        if codec == DELTA:
            nb = bitpack.num_blocks(n)
            if body.shape[0] < 8 * nb:
                raise CodecError("delta block bases are truncated")
            bases = body[:8 * nb].view(np.int64)
            directory, words, _ = bitpack.split(body[8 * nb:], n)
            first = bases[0] + _block_values(directory, words, n, 0)[0]
            with np.errstate(over="ignore"):
                last = bases[last_block] + _block_values(directory, words, n, last_block).sum()
            return int(first), int(last)
        if codec == RLE:
            if not 0 < param <= n:
                raise CodecError("run count out of range")
            directory, words, _ = bitpack.split(body, param)
            return (int(_block_values(directory, words, param, 0)[0]),
                    int(_block_values(directory, words, param, (param - 1) // BLOCK)[-1]))
        if not 0 < param <= MAX_DICT_VALUES or body.shape[0] < 8 * param:
            raise CodecError("dictionary size out of range")
        values = body[:8 * param].view(np.int64)
        directory, words, _ = bitpack.split(body[8 * param:], n)
        codes = (int(_block_values(directory, words, n, 0)[0]), int(_block_values(directory, words, n, last_block)[-1]))
        if not all(0 <= c < param for c in codes):
            raise CodecError("dictionary code out of range")
        return int(values[codes[0]]), int(values[codes[1]])
    except ValueError as e:
        if isinstance(e, CodecError):
            raise
        raise CodecError(f"{codec}: {e}") from None
