"""Adversarial and random value arrays shared by the CPU and GPU codec tests."""

from __future__ import annotations

import numpy as np

from hetdb.codec.encodings import CONST, DELTA, DICT, FOR, RLE, encode_as

I64 = np.iinfo(np.int64)
I32 = np.iinfo(np.int32)
ENCODED = (CONST, FOR, DELTA, RLE, DICT)


def cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    out = {
        "one_value": np.array([42], np.int64),
        "one_negative_i32": np.array([-7], np.int32),
        "all_equal": np.full(5000, -3, np.int32),
        "alternating_i32": np.resize(np.array([I32.min, I32.max], np.int32), 3001),
        "alternating_i64": np.resize(np.array([I64.min, I64.max], np.int64), 2049),
        "int64_extremes": np.array([I64.min, I64.max, 0, -1, 1, I64.min + 1, I64.max - 1] * 150, np.int64),
        "sorted_i64": np.sort(rng.integers(-10**12, 10**12, 4099)),
        "reverse_sorted_i32": np.sort(rng.integers(-10**6, 10**6, 3333, dtype=np.int32))[::-1].copy(),
        "runs_of_one": np.arange(2500, dtype=np.int32) * 7919,
        "one_run": np.full(1 << 14, 19980101, np.int32),
        "runs": np.repeat(rng.integers(0, 1 << 40, 77), rng.integers(1, 300, 77)),
        # runs shorter and longer than the CPU decoder's blind 8-value stores, ending off a multiple of 8
        "short_runs": np.repeat(np.arange(1201, dtype=np.int32) * 3, rng.integers(1, 12, 1201)),
        # blocks of 1024 runs covering very different rows (1024; a run of 20,000; short runs): the run
        # block search's guess (rows spread evenly over the blocks) is off in both directions
        "skewed_runs": np.repeat(np.arange(4100, dtype=np.int64) - 2000,
                                 np.concatenate([np.ones(2000, np.int64), [20_000],
                                                 rng.integers(1, 4, 2099)])),
        # 40 run blocks after a first run of 40,000 rows: rows of the early blocks lie far before
        # where rows spread evenly would put them, outside the GPU tile loaders' window of 32 run
        # blocks around that guess (they fall back to the gallop)
        "long_first_run": np.repeat(np.arange(40_001, dtype=np.int32),
                                    np.concatenate([[40_000], np.ones(40_000, np.int64)])),
        "random_i32": rng.integers(I32.min, I32.max, 1500, dtype=np.int32, endpoint=True),
        "random_i64": rng.integers(I64.min, I64.max, 1500, dtype=np.int64, endpoint=True),
        "small_range": rng.integers(0, 51, 10_000).astype(np.int32),
        # 12,939 distinct values over a 17-bit range (SSB lo_supplycost): a forced dictionary of that size
        "many_distinct": rng.choice(rng.integers(54060, 125940, 12939), 20_000).astype(np.int32),
        "few_wide": rng.choice(np.array([-(1 << 50), 3, 1 << 45, 19920101], np.int64), 4097),
        "block_plus_one": rng.integers(0, 1000, 1025).astype(np.int64),
        "block_minus_one": rng.integers(0, 1000, 1023).astype(np.int32),
        "bools": rng.integers(0, 2, 3000).astype(bool),
        "bools_all_true": np.ones(1500, bool),
        "floats": rng.normal(size=2000),
        "float_specials": np.resize(np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5,
                                              np.frombuffer(np.uint64(0x7FF8DEADBEEF0001).tobytes(),
                                                            np.float64)[0]]), 1100),
    }
    return out


def bit_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


WIDTHS = (0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 47, 48, 55, 62, 63, 64)


def width_blocks(seed: int, last: int) -> np.ndarray:
    """One 1024-value block per width of WIDTHS over a negative reference, then ``last`` values."""
    rng = np.random.default_rng(seed)
    out = []
    for w in WIDTHS:
        ref = np.int64(-(1 << min(w, 62)) - 3)
        if w == 64:
            v = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 1024, dtype=np.int64, endpoint=True)
            v[:2] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        else:
            span = np.uint64((1 << w) - 1)
            v = ref + rng.integers(0, span, 1024, dtype=np.uint64, endpoint=True).astype(np.int64)
            v[:2] = ref, ref + span.astype(np.int64)
        out.append(v)
    out.append(rng.integers(-50, 50, last).astype(np.int64))
    return np.concatenate(out)


def case_files(directory, every: dict[str, np.ndarray]) -> tuple[list[str], list[tuple]]:
    """Each case of ``every`` in each codec of ENCODED that takes it, written to ``directory`` for a
    host-side decode checker: (its arguments: input file, value count, output file per case;
    (label, output file, expected int64 image) per case)."""
    args, expected = [], []
    for name, values in sorted(every.items()):
        for enc in ENCODED:
            try:
                buf = encode_as(values, enc)
            except ValueError:
                continue
            src, out = directory / f"{name}-{enc}.bin", directory / f"{name}-{enc}.out"
            src.write_bytes(buf.tobytes())
            args += [str(src), str(values.shape[0]), str(out)]
            image = values.view(np.int64) if values.dtype == np.float64 else values.astype(np.int64)
            expected.append((f"{enc} on {name}", out, image))
    return args, expected
