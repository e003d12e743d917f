"""Switches for the extensions of the GPU pipeline compiler (exec/compiled.py), each of which can be
turned off alone: a switched-off extension is a refusal with a reason like any other (EXPLAIN
ANALYZE names it), so the pipeline runs operator at a time as it did before the extension.

``HETDB_GPU_COMPILE_OFF`` (comma-separated names of FEATURES) switches extensions off for a
process; ``disabled`` (a set) does it at run time (tests)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

FEATURES = {
    "right_semi_anti": "right_semi / right_anti joins marking build rows in the kernel",
    "keyless_join": "joins without keys (every build row matches: scalar subqueries)",
    "string_group_rows": "plain-string build columns as group keys (grouped by build row)",
    "dict_expr_keys": "string group keys computed from one dictionary column (grouped by its codes)",
    "count_distinct": "DISTINCT aggregates (the kernel keeps one row per distinct keys and arguments)",
    "plain_like": "LIKE on plain-string pages in the kernel (other uses of them are refused)",
    "wide_decimal": "HUGEINT / DECIMAL(>18) values in kernels (held in 64 bits; past them the query "
                    "runs on the CPU)",
    "mod": "x % y in kernels (a zero divisor raises DuckDB's division by zero error)",
    "row_sinks": "kernels selecting rows (filters, probes) for a sort, top-N or a hash build without probes",
    "resident_scans": "hot scans read from the device cache without the page streamer",
    "paged": "one launch over every cached page of a hot scan (page tables)",
    "string_join_keys": "string join keys (a dictionary code looks up the build's id of its string)",
    "grow_tables": "kept aggregation tables growing instead of handing out partial states",
    "group_fold": "compiled aggregation states folded before the group's atomics (without GROUP BY in "
                  "registers, one update per block; with keys across the lanes of a warp in the same group)",
    "dependent_keys": "dense fused group keys that are build columns of a join on another group key "
                      "(looked up per group instead of grouped by)",
    "wide_dense_groups": "fused dense aggregation over key domains past 2^20 groups (up to 2 per scanned row)",
    # (on by default without an H100 A/B yet: the checkpoint's scripts/gpu_fused_shapes.py run was lost)
    "fused_eager": "dense fused kernels loading the columns most rows still need at a tile's start "
                   "(codegen/generate.py eager_columns) instead of each after the stage before it",
    # (s16 checkpoint, H100, gpu_fused_shapes --forms at SSB SF 20's size: q2.1 1.156 -> 0.670 ms,
    # q3.1 1.447 -> 0.857, q4.1 1.240 -> 1.007)
    "fused_probe_forms": "dense fused kernels probing membership bitmaps and 1-2 byte payload codes per key "
                         "(codegen spec.DenseProbe.form; exec/fusion_forms.py), the columns left loaded at "
                         "once after a selective probe, streaming loads",
}

disabled: set[str] = {n.strip() for n in os.environ.get("HETDB_GPU_COMPILE_OFF", "").split(",") if n.strip()}

# Extensions that are off unless named in ``HETDB_GPU_COMPILE_ON`` (comma-separated), or in
# ``enabled`` at run time: measured against the default before they become one.
EXPERIMENTS = {
    "slot_share": "lanes of a warp with equal group keys looking their hash-table slot up once",
    # (measured at 988b3ce: TPC-H q01 20.5 -> 33.0 ms with it on: its 4 groups' shared-memory atomics
    # cost less than combining ~19 accumulators across the warp lane by lane)
    "fused_fold": "dense fused kernels combining a warp's states per group before the accumulator's atomic",
    "fused_payload_by_key": "dense fused kernels reading a join's payload by key, with the row look-up, "
                            "instead of by build row after it",
    # (s12 at SF 20: SSB q2.1's shape 0.998 ms at 256 x 4 against 1.247 ms at 128 x 4; other shapes untried)
    "fused_block256": "dense fused kernels of 256 threads per block instead of 128",
    # (s16 checkpoint, H100, gpu_fused_shapes --forms at SSB SF 20's size, codes + batch + streaming
    # loads: q2.1 0.670 ms, q3.1 0.857, q4.1 1.007; with the next tile prefetched 0.768, 0.958, 1.081
    # (55-64 registers: fewer blocks resident); bitmaps first on top of that 0.834, 1.083, 1.210)
    "fused_prefetch": "dense fused kernels loading the next tile's eager columns while working on the "
                      "current one (codegen spec.prefetch)",
    "fused_probe_bitmaps_first": "dense fused probes of large code arrays with few keys joining reading "
                                 "the key's bit in a bitmap before its code (DenseProbe.form bits_code8/16)",
    # (the A/B of the feature fused_probe_forms: scripts/gpu_hot_split.py --experiment fused_probe_rows)
    "fused_probe_rows": "dense fused kernels probing int32 build rows and payload arrays, the columns loaded "
                        "stage by stage, as before fused_probe_forms",
}
enabled: set[str] = {n.strip() for n in os.environ.get("HETDB_GPU_COMPILE_ON", "").split(",") if n.strip()}


def on(name: str) -> bool:
    """Whether experiment ``name`` is switched on."""
    if name not in EXPERIMENTS:
        raise KeyError(name)
    return name in enabled


def off(name: str) -> str | None:
    """Why extension ``name`` is not used (None when it is on)."""
    if name not in FEATURES:
        raise KeyError(name)
    if name in disabled:
        return f"{FEATURES[name]} are switched off (HETDB_GPU_COMPILE_OFF={name})"
    return None


def expr_refusal(exprs: Iterable[Any]) -> str | None:
    """Why a kernel over ``exprs`` (expression IR trees, None allowed) is refused because an
    extension they need is switched off (``wide_decimal``, ``mod``); None when nothing is."""
    if "mod" not in disabled and "wide_decimal" not in disabled:
        return None  # (the default: no walk over every expression of every pipeline, every run)
    stack = [e for e in exprs if e is not None]
    while stack:
        e = stack.pop()
        why = None
        if getattr(e, "op", None) == "mod":
            why = off("mod")
        if why is None and e.dtype.is_wide:
            why = off("wide_decimal")
        if why:
            return why
        stack.extend(e.children())
    return None
