"""The shape of a dense fused kernel's probes under the feature ``fused_probe_forms``
(codegen/spec.py DenseProbe.form, FusedPipelineSpec.batch_after / stream_loads / prefetch): what each
probe reads (a membership bitmap, 1-2 byte payload codes, or the build rows), after which probe the
columns left load at once, streaming loads; the experiments fused_prefetch (the next tile's first
columns prefetched) and fused_probe_bitmaps_first (large codes behind their bitmap)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hetdb.exec.compiled_features import off, on
from hetdb.types import DataType


def forms_on() -> bool:
    """Whether dense probes take their narrow forms: the feature fused_probe_forms, unless switched
    off or the experiment fused_probe_rows (its A/B) is on."""
    return off("fused_probe_forms") is None and not on("fused_probe_rows")


# with the experiment fused_probe_bitmaps_first, codes of more bytes than this (past what L1 keeps of
# them) go behind the bitmap's look-up when at most PREFILTER_MAX_HITS of the probed rows join: most
# then end at the bitmap (SSB SF 20: part 1 MB of codes, 1/25 joining in q2.1; customer 600 KB, 1/5
# in q3.1). Measured slower on the H100 (s16: q2.1 0.834 against 0.768 ms, q3.1 1.083 against 0.958):
# a second dependent look-up costs more than the L2 reads it saves
PREFILTER_BYTES = 64 << 10
PREFILTER_MAX_HITS = 0.5


def probe_form(payload: list[tuple[str, DataType]], groups: dict, table: Any = None, share: float = -1.0) -> str:
    """The array a dense probe of an aggregate pipeline reads: a membership bitmap without payload,
    1- or 2-byte codes when the payload is one group key's ranks (0 .. domain size - 1: ``groups``
    maps a key cid to (rank cid, KeyDomain, dictionary)), with experiment fused_probe_bitmaps_first
    behind the bitmap when ``table`` (the DenseJoinTable) has many codes and lets few probed rows
    through (``share`` of its dimension's rows kept where known, else its share of the key range);
    else the build rows ("rows", also when the feature is off)."""
    if not forms_on():
        return "rows"
    if not payload:
        return "bits"
    ranks = {kcid: domain.size for kcid, domain, _ in groups.values()}
    if len(payload) == 1 and payload[0][0] in ranks and payload[0][1].kind == "int32":
        size = ranks[payload[0][0]]
        form = "code8" if size <= 1 << 7 else "code16" if size <= 1 << 15 else "rows"
        if form != "rows" and on("fused_probe_bitmaps_first") and table is not None \
                and table.size * (1 if form == "code8" else 2) > PREFILTER_BYTES:
            through = share if share >= 0 else table.num_rows / max(table.size, 1)
            if through <= PREFILTER_MAX_HITS:
                form = "bits_" + form
        return form
    return "rows"


def probe_shape(spec: Any, hits: list[float], shares: dict[int, float]) -> Any:
    """``spec`` with the columns left loaded at once after generate.batch_point's probe and streaming
    loads (with experiment fused_prefetch: the next tile's eager columns prefetched). ``hits``: per
    probe the share of its key range the build holds; ``shares``: per probe (index) the share of
    its dimension's rows the build kept, where known: what a foreign-key probe lets through (a date
    dimension keyed by yyyymmdd holds 4% of its key range but lets every row through)."""
    from hetdb.backend.gpu.codegen.generate import batch_point

    keep = [shares[i] if shares.get(i, -1.0) >= 0 else h for i, h in enumerate(hits)]
    return dataclasses.replace(spec, batch_after=batch_point(spec, keep), stream_loads=True,
                               prefetch=on("fused_prefetch"))
