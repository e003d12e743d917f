"""A compiled GPU aggregation's DOUBLE group keys as DuckDB groups them: -0.0 and 0.0 are one group,
every NaN (whatever its payload) is one group, and the {-0.0, 0.0} group shows the sign of its first
row (DuckDB shows the first value it saw). Run without a GPU: the generated kernel compiled as host
C++ (pipeline_host.py's shim, one thread at a time in an order that is not row order), as
one batch, as pages, after the table grew, and as a later launch into the same table (pl_row0)."""

from __future__ import annotations

import random
import struct

import pytest
from pipeline_host import by_key, col, run_kernel

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_spec import AggregateSink, Input, PipelineSpec

I64_MAX = (1 << 63) - 1
NAN_BITS = 0x7FF8000000000000


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _values(first_zero: float, n: int, seed: int) -> list:
    """n values over {1.5, -2.0, ±0.0, NaNs with several payloads, NULL}; the first zero is
    ``first_zero``, placed past the first tile so the shim's thread order reaches a later zero first."""
    rng = random.Random(seed)
    pool = [1.5, -2.0, ("bits", NAN_BITS), ("bits", NAN_BITS | 7), ("bits", -1), None]  # -1: a negative NaN
    out = [rng.choice(pool) for _ in range(n)]
    at = 700
    out[at] = first_zero
    for i in range(at + 1, n, 5):
        out[i] = rng.choice([0.0, -0.0])
    return out


def _zero_key(groups: dict) -> tuple:
    return next(k for k in groups if k[0] is not None and k[0] == 0)


@pytest.mark.parametrize("first_zero", [-0.0, 0.0], ids=["neg-first", "pos-first"])
def test_zero_and_nan_group_keys(first_zero, tmp_path):
    n = 3000
    f = _values(first_zero, n, 11)
    spec = PipelineSpec((Input("f", T.FLOAT64),), (), AggregateSink((col("f", T.FLOAT64),), (("count_star", None),)))
    kernel = generate_pipeline(spec)
    signs = [a for a in kernel.accumulators if a.part.startswith("zero_sign")]
    assert len(signs) == 1 and signs[0].agg == -1

    def check(groups: dict) -> None:
        # groups: NULL, NaN (one, canonical bits), 1.5, -2.0, and one zero group
        assert len(groups) == 5, groups
        counts = {k: accs[0] for k, accs in groups.items()}
        is_nan = [x for x in f if isinstance(x, tuple)]
        assert counts[(NAN_BITS,)] == len(is_nan)
        assert counts[(None,)] == sum(x is None for x in f)
        zero = _zero_key(groups)
        assert zero == (0,) and counts[zero] == sum(isinstance(x, float) and x == 0 for x in f)
        sign = groups[zero][1]
        first = f.index(first_zero)
        assert sign != I64_MAX and sign >> 1 == first and (sign & 1) == (1 if _bits(first_zero) < 0 else 0)
        for key, accs in groups.items():
            if key != zero:
                assert accs[1] == I64_MAX  # no zero row in that group

    one = by_key(run_kernel(spec, {"f": f}, [], tmp_path))
    check(one)
    check(by_key(run_kernel(spec, {"f": f}, [], tmp_path, pages=(600, 700, n - 1300))))
    check(by_key(run_kernel(spec, {"f": f}, [], tmp_path, grow_to=8192)))
    # a second launch into the same table numbers its rows after the first's (pl_row0)
    later = by_key(run_kernel(spec, {"f": f}, [], tmp_path, row0=n))
    assert later[_zero_key(later)][1] == one[_zero_key(one)][1] + 2 * n


def test_only_double_keys_carry_a_sign(tmp_path):
    spec = PipelineSpec((Input("k", T.INT64), Input("f", T.FLOAT64)), (),
                        AggregateSink((col("k"),), (("sum", col("f", T.FLOAT64)),)))
    body = generate_pipeline(spec).body
    assert "pl_row0" not in body and "zero_sign" not in str(generate_pipeline(spec).accumulators)
