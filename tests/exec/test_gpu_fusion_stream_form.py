"""How a fused kernel's pages reach it when they are streamed (exec/fusion_stream.py), on SSB's real
fused specs planned on the CPU with emulated kernels (fusion_emulation.py): the late inputs (read
only for rows past every filter and probe) and the stream form the options, the scan and the
measured passing share choose."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402


def test_late_inputs_are_the_columns_a_kernel_reads_after_its_filters_and_probes(ssb_db, emulated_fusion):
    # what gpu_zero_copy may leave in the pinned host tier: SSB's measures (read for rows that
    # passed every filter and probe), never a filter column or a probe key
    from hetdb.exec.fusion_stream import late_inputs

    queries = load_queries("ssb")
    with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
        for name in ("q1.1", "q3.4", "q4.1"):
            con.sql(queries[name])
    specs = [p.real.spec for p in emulated_fusion]
    lates = [sorted(late_inputs(s)) for s in specs]
    assert len(specs) >= 3, lates
    named = [" ".join(late) for late in lates]
    assert any("extendedprice" in n and "discount" not in n and "quantity" not in n for n in named), named
    assert any("revenue" in n and "supplycost" in n and "custkey" not in n for n in named), named
    for s, late in zip(specs, lates):
        early = set().union(*(f.columns() for f in s.filters), *(p.key.columns() for p in s.probes))
        assert not early & set(late) and set(late) <= {c for c, _ in s.inputs}


def test_stream_form_follows_the_options_the_scan_and_the_measured_share(ssb_db, emulated_fusion, monkeypatch):
    # exec/fusion_stream.py on SSB q3.4's real fused spec (no GPU: the kernels are not compiled)
    import types

    from hetdb.backend.gpu.codegen.runtime import FusedPipeline
    from hetdb.cache.rates import shared_rates
    from hetdb.cache.router import ZERO_COPY_MAX_PASSING
    from hetdb.exec.fusion_stream import late_inputs, stream_form

    monkeypatch.setattr(FusedPipeline, "function", lambda self: None)
    with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
        con.sql(load_queries("ssb")["q3.4"])
    import hetdb.backend.gpu.codegen as codegen
    from hetdb.backend.gpu.codegen import runtime

    monkeypatch.setattr(codegen, "compile_fused_pipeline", runtime.compile_fused_pipeline)  # the real ones
    fp = emulated_fusion[-1].real
    names = {cid: cid.split(".")[-1].split("#")[0] for cid, _ in fp.spec.inputs}
    src = types.SimpleNamespace(scan=types.SimpleNamespace(
        fields=[types.SimpleNamespace(cid=c) for c in names], column_names=list(names.values())))

    def form(mode="off", stored=False, pass_through=True, started=False):
        ctx = types.SimpleNamespace(device=object(), options=types.SimpleNamespace(
            gpu_zero_copy=mode, gpu_stream_encoded=stored, route="auto"))
        gsrc = types.SimpleNamespace(iterator=object() if started else None, pass_through=pass_through,
                                     zero_copy=frozenset(), stream_encoded=False)
        got, key = stream_form(ctx, src, gsrc, fp)
        return got, key, gsrc

    got, key, g = form()
    assert got is fp and key is None and not g.zero_copy and not g.stream_encoded
    got, key, g = form(stored=True)
    assert got.spec.encoded and g.stream_encoded and not g.zero_copy and key is None
    got, key, g = form("on")
    late = {names[c] for c in late_inputs(fp.spec)}
    # (the kernel reads pages as stored; the scan's other pages still come decoded)
    assert any("revenue" in n for n in late) and g.zero_copy == late and not g.stream_encoded and got.spec.encoded
    assert key is not None
    for kw in (dict(pass_through=False), dict(started=True)):  # the device cache in play / streaming
        got, key, g = form("on", **kw)
        assert got is fp and not g.zero_copy and not g.stream_encoded
    rates = shared_rates()
    got, key, g = form("auto")
    rates.passing.pop(key, None)
    got, key, g = form("auto")  # not measured yet: copies
    assert got is fp and not g.zero_copy and key is not None
    rates.observe_passing(key, 1_000_000, int(ZERO_COPY_MAX_PASSING * 1_000_000))
    got, key, g = form("auto")
    assert g.zero_copy == late and got.spec.encoded
    rates.observe_passing(key, 1_000_000, 500_000)
    assert not form("auto")[2].zero_copy
    rates.passing.pop(key, None)  # (the process's rates as they were)
