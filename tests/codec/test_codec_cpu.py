"""Every encoding round-trips bit-exactly on the CPU, on random and adversarial inputs."""

from __future__ import annotations

import numpy as np
import pytest
from codec_cases import ENCODED, bit_equal, cases

from hetdb import codec
from hetdb.codec import bitpack
from hetdb.codec.encodings import (
    CONST,
    DICT,
    DICT_SAMPLE,
    FOR,
    HEADER,
    MAX_DICT_VALUES,
    PLAIN,
    RLE,
    CodecError,
    _dict_may_win,
    encode_as,
    estimate_distinct,
)

CASES = cases()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("enc", ENCODED)
def test_forced_encoding_round_trips(name: str, enc: str) -> None:
    values = CASES[name]
    try:
        buf = encode_as(values, enc)
    except ValueError:
        # only const of unequal values may be refused (every case has at most 65536 distinct values)
        assert enc == CONST and len(np.unique(values.view(f"u{values.dtype.itemsize}"))) > 1
        return
    assert buf[0] == list(ENCODED).index(enc) + 1 and buf.shape[0] % 8 == 0
    out = codec.decode(buf, enc, values.shape[0], values.dtype)
    assert bit_equal(out, values), f"{enc} on {name}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_chosen_encoding_is_smallest_and_round_trips(name: str) -> None:
    values = CASES[name]
    buf, chosen = codec.encode(values)
    assert bit_equal(codec.decode(buf, chosen, values.shape[0], values.dtype), values)
    assert buf.shape[0] <= values.nbytes
    for enc in ENCODED:
        try:
            other = encode_as(values, enc)
        except ValueError:
            continue
        # the selection may skip RLE/dict by its cheap pre-checks; otherwise nothing beats the choice
        if enc not in (RLE, DICT):
            assert buf.shape[0] <= other.shape[0], f"{enc} is smaller than {chosen} on {name}"


def test_choices_on_typical_columns() -> None:
    rng = np.random.default_rng(1)
    assert codec.encode(np.full(4096, 5, np.int32))[1] == CONST
    assert codec.encode(rng.integers(1, 51, 1 << 15).astype(np.int32))[1] == FOR
    assert codec.encode(np.arange(1 << 15, dtype=np.int64) * 3 + 10**12)[1] == "delta"
    assert codec.encode(np.repeat(rng.integers(0, 1 << 30, 30), 1000))[1] == RLE
    assert codec.encode(rng.choice(np.array([19920101, 19981231, 19950615]), 1 << 15))[1] in (FOR, DICT)
    assert codec.encode(rng.integers(-2**63, 2**63 - 1, 4096, endpoint=True))[1] == PLAIN
    # ~13k distinct values spread over a 17-bit range (SSB lo_supplycost): 14-bit dictionary codes
    # beat 17-bit FOR, though a sample of the page has more distinct values than a small cap allows
    costs = rng.choice(rng.integers(54060, 125940, 12939), 1 << 20).astype(np.int32)
    buf, chosen = codec.encode(costs)
    assert chosen == DICT and buf.shape[0] < encode_as(costs, FOR).shape[0]
    # near-unique values: no dictionary is tried (the sample already shows too many distinct values)
    assert not _dict_may_win(rng.permutation(1 << 20), np.full(1024, 20))
    assert codec.encode(np.zeros(0, np.int64))[1] == PLAIN
    assert codec.encode(np.zeros(0, np.int64), ())[1] == PLAIN


def test_bit_widths_cover_0_to_64() -> None:
    rng = np.random.default_rng(2)
    for w in range(65):
        mask = np.uint64((1 << w) - 1)
        u = rng.integers(0, 2**64 - 1, 2000, dtype=np.uint64, endpoint=True) & mask
        u[0], u[1] = 0, mask
        v = (u + np.uint64(1 << 63)).view(np.int64)  # offset by int64 min: signed order = unsigned order
        refs, widths = bitpack.block_params(v)
        assert widths[0] == w and refs[0] == np.iinfo(np.int64).min
        buf = encode_as(v, FOR)
        assert bit_equal(codec.decode(buf, FOR, v.shape[0], np.int64), v)


@pytest.mark.parametrize("enc", ENCODED)
def test_damaged_section_is_codec_error(enc: str) -> None:
    values = np.repeat(np.arange(40, dtype=np.int64) * 1000, 50)
    values[-1] = 7 if enc != CONST else values[0]
    if enc == CONST:
        values[:] = 5
    buf = encode_as(values, enc).copy()
    with pytest.raises(CodecError):
        codec.decode(buf[:HEADER - 1], enc, values.shape[0], values.dtype)
    with pytest.raises(CodecError):
        codec.decode(buf, enc, values.shape[0] + 1, values.dtype)
    with pytest.raises(CodecError):
        codec.decode(buf, enc, values.shape[0], np.int32)
    if enc != CONST:
        bad = buf.copy()
        bad[HEADER:] = 0xFF  # widths over 64, offsets that are not the running sum, truncation
        with pytest.raises(CodecError):
            codec.decode(bad, enc, values.shape[0], values.dtype)


def test_distinct_estimate_from_a_sample() -> None:
    rng = np.random.default_rng(4)
    for distinct in (50, 4096, 12939, 40000):
        sample = rng.integers(0, distinct, DICT_SAMPLE)
        est = estimate_distinct(len(np.unique(sample)), DICT_SAMPLE)
        assert 0.8 * distinct <= est <= 1.2 * distinct, (distinct, est)
    assert estimate_distinct(DICT_SAMPLE, DICT_SAMPLE) == MAX_DICT_VALUES + 1


def test_rle_block_start_off_the_runs_is_codec_error() -> None:
    values = np.repeat(np.arange(3000, dtype=np.int64), 3)  # 3000 runs: 3 blocks of runs
    buf = encode_as(values, RLE).copy()
    _, _, size = bitpack.split(buf[HEADER:], 3000)
    starts = buf[HEADER + size:HEADER + size + 24].view(np.int64)
    assert list(starts) == [0, 3072, 6144]
    assert bit_equal(codec.decode(buf, RLE, values.shape[0], np.int64), values)
    starts[1] += 1
    with pytest.raises(CodecError, match="run ends"):
        codec.decode(buf, RLE, values.shape[0], np.int64)
