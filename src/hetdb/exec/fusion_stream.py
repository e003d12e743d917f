"""How a fused GPU pipeline's scan streams past the device cache (a warm scan: its pages are in the
pinned host tier, none on the GPU, and ``scan_device.first_scan`` let it pass through).

Two choices, made before the streamer starts:

* pages as stored (option ``gpu_stream_encoded``, or whenever columns stay in the host tier): each
  delivery carries the pages' encoded bytes and the kernel decodes the rows it reads as it loads them
  (the same pipeline compiled for pages as stored, ``spec.encoded``), instead of decode kernels
  writing decoded copies first;
* columns read in place (option ``gpu_zero_copy``; HetCache's sub-page access): the *late* inputs
  of a selective kernel, read only for rows that passed every filter and probe, stay in the pinned
  host tier and the kernel reads those rows over the link. Which ones is the router's decision
  (``cache/router.py`` ``zero_copy_columns``: always with 'on'; with 'auto' once a run of the pipeline
  measured how few rows reach them, ``Rates.passing``).

A scan that may read or fill the device cache is left as it is: the cache's entries are decoded
unless ``gpu_compressed_cache`` says otherwise, and every scan must find them in the form it expects.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.scan import TableScan


def late_inputs(spec: Any) -> list[str]:
    """The inputs (cids) a fused kernel reads only for rows that passed every filter on scanned
    columns and every probe (generate.py loads a column where it is first needed): those neither a
    filter nor a probe key reads; none when the kernel neither filters nor probes."""
    if not (spec.filters or spec.probes):
        return []
    early: set[str] = set()
    for e in [*spec.filters, *(p.key for p in spec.probes)]:
        early |= e.columns()
    return [cid for cid, _ in spec.inputs if cid not in early]


def stream_form(ctx: ExecContext, src: TableScan, gsrc: Any, fp: Any) -> tuple[Any, str | None]:
    """Set ``gsrc.stream_encoded`` (deliver pages as stored) and ``gsrc.zero_copy`` (columns left in
    the host tier) for a scan about to stream (see the module docstring). Returns the pipeline to run
    (compiled for pages as stored when they come so and ``fp`` is not) and the key under which the
    pipeline's passing share is to be measured afterwards (None: gpu_zero_copy is off or nothing
    applies)."""
    mode = getattr(ctx.options, "gpu_zero_copy", "off")
    stored = bool(getattr(ctx.options, "gpu_stream_encoded", False))
    spec = getattr(fp, "spec", None)
    if (mode == "off" and not stored) or ctx.device is None or spec is None or not hasattr(fp, "consume_pages"):
        return fp, None
    if getattr(gsrc, "iterator", True) is not None:
        return fp, None  # not a device scan, or its streamer started already
    if not (getattr(gsrc, "pass_through", False) or getattr(ctx.options, "route", "auto") == "copy"):
        return fp, None  # the scan may read and fill the device cache
    from hetdb.cache.rates import shared_rates
    from hetdb.cache.router import zero_copy_columns

    key = passing = None
    late: list[str] = []
    if mode != "off":
        name_of = dict(zip((f.cid for f in src.scan.fields), src.scan.column_names))
        late_cids = late_inputs(spec)
        early_names = {name_of[c] for c, _ in spec.inputs if c in name_of and c not in late_cids}
        late = list(dict.fromkeys(name_of[c] for c in late_cids if c in name_of and name_of[c] not in early_names))
        key = "zero-copy " + dataclasses.replace(spec, encoded=False).describe()
        passing = shared_rates().passing_share(key)
        gsrc.zero_copy = zero_copy_columns(mode, late, passing)
    gsrc.stream_encoded = stored or bool(gsrc.zero_copy)
    if not spec.encoded and (gsrc.stream_encoded or (mode == "auto" and late and passing is None)):
        # the same pipeline reading pages as stored (and decoded ones: each page's entry says which);
        # its accumulators are laid out alike, so the state made for ``fp`` serves it. Under 'auto'
        # before a measurement it is compiled now (a first run pays that), so the run that reads in
        # place does not
        from hetdb.backend.gpu.codegen import compile_fused_pipeline
        from hetdb.errors import HetdbError

        try:
            as_stored = compile_fused_pipeline(dataclasses.replace(spec, encoded=True))
            as_stored.function()
        except HetdbError:  # (UnsupportedError, or NVRTC refusing it): pages come decoded, all copied
            gsrc.zero_copy, gsrc.stream_encoded = frozenset(), False
            return fp, key
        if gsrc.stream_encoded:
            fp = as_stored
    return fp, key
