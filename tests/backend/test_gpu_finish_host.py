"""FusedPipeline.finish for a small domain (runtime._finish_on_host) without a GPU: the state's one
buffer ([domain errors, arith_err, accumulator 0, 1, ...]) read back as a host array, the non-empty
groups found on the host and returned as host arrays (``host=True``, the host tail's hand-over) or
sent back through ``arrays_to_device`` (here the identity: the one step that needs a GPU), against
NumPy; error words raise as on the device path."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.gpu.codegen import AGGREGATE, AggregateSpec, FusedPipelineSpec, compile_fused_pipeline
from hetdb.backend.gpu.codegen import runtime as R
from hetdb.backend.gpu.codegen.checked import ERR_WORDS
from hetdb.errors import OutOfRangeError
from hetdb.plan.expr import ColumnRef


class _Buffer(np.ndarray):
    """A host array standing for the device buffer (``get`` copies it to the host)."""

    def get(self):
        return np.asarray(self).copy()


def _state(fp, domains, accs):
    """An AggregateState whose buffer holds ``accs`` (one int64 array per accumulator)."""
    sizes = [hi - lo + 1 for lo, hi in domains]
    g = int(np.prod(sizes)) if sizes else 1
    strides = [int(np.prod(sizes[k + 1:])) for k in range(len(sizes))]
    head = 1 + ERR_WORDS
    buf = np.zeros(head + len(accs) * g, np.int64).view(_Buffer)
    for k, a in enumerate(accs):
        buf[head + k * g:head + (k + 1) * g] = a
    words = buf[:head].view(np.uint64)
    return R.AggregateState(domains, sizes, strides, g, [buf[head + k * g:head + (k + 1) * g] for k in range(len(accs))],
                            words[:1], words[1:], buffer=buf)


@pytest.mark.parametrize("host", [True, False])
def test_small_domains_finish_on_the_host(monkeypatch, host):
    monkeypatch.setattr(R, "arrays_to_device", lambda arrays: [np.asarray(a) for a in arrays])
    g, v, f = ColumnRef(T.INT32, "g", False), ColumnRef(T.INT64, "v", False), ColumnRef(T.FLOAT64, "f", False)
    spec = FusedPipelineSpec((("g", T.INT32), ("v", T.INT64), ("f", T.FLOAT64)), (), (), (g,),
                             (AggregateSpec("sum", v), AggregateSpec("min", v), AggregateSpec("max", f),
                              AggregateSpec("sum", f)), AGGREGATE)
    fp = compile_fused_pipeline(spec)
    rng = np.random.default_rng(2)
    keys, vals, fl = rng.integers(3, 10, 60), rng.integers(-100, 100, 60), rng.normal(size=60)
    keys[keys == 6] = 7  # group 6 stays empty
    n = 7
    count, total = np.zeros(n, np.int64), np.zeros(n, np.int64)
    lo_v, hi_f, sum_f = np.full(n, R.I64_MAX), np.full(n, R.I64_MIN), np.zeros(n)
    for k, x, y in zip(keys - 3, vals, fl):
        count[k] += 1
        total[k] += x
        lo_v[k] = min(lo_v[k], x)
        bits = np.float64(y).view(np.int64)
        hi_f[k] = max(hi_f[k], bits if bits >= 0 else bits ^ R.I64_MAX)
        sum_f[k] += y
    state = _state(fp, [(3, 9)], [count, total, lo_v, hi_f, sum_f.view(np.int64)])
    assert fp.finishes_on_host(state)
    res = fp.finish(state, host=host)
    want = [k for k in range(3, 10) if k != 6]
    assert res.num_groups == 6 and np.asarray(res.keys[0]).tolist() == want
    assert np.asarray(res.counts).tolist() == [int((keys == k).sum()) for k in want]
    assert np.asarray(res.values[0]).tolist() == [int(vals[keys == k].sum()) for k in want]
    assert np.asarray(res.values[1]).tolist() == [int(vals[keys == k].min()) for k in want]
    assert np.allclose(res.values[2], [fl[keys == k].max() for k in want])
    assert np.allclose(res.values[3], [fl[keys == k].sum() for k in want])
    if host:
        assert all(type(a) is np.ndarray for a in [*res.keys, *res.values, res.counts])


def test_error_words_raise_when_finishing_on_the_host():
    v = ColumnRef(T.INT64, "v", False)
    fp = compile_fused_pipeline(FusedPipelineSpec((("v", T.INT64),), aggregates=(AggregateSpec("sum", v),)))
    state = _state(fp, [], [np.array([1]), np.array([5])])
    state.domain_errors[0] = 3
    with pytest.raises(ValueError, match="3 rows had a group key outside its domain"):
        fp.finish(state, host=True)
    state = _state(fp, [], [np.array([1]), np.array([5])])
    state.arith_err[:] = [1, 2 + 8 * 1, 7, 9]  # mul of INT64 overflowed: 7 * 9
    with pytest.raises(OutOfRangeError, match="Overflow in multiplication of INT64"):
        fp.finish(state, host=True)
