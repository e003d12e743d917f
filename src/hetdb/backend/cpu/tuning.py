"""Thresholds of the CPU engine's parallel paths, settable per process without editing code.

Each is a row (or cell) count at which a path switches: below it the cheaper-to-start path runs (one
kernel thread, one merge, one pass), at or above it the parallel one. They were set by measurements on
the 2-core machine and the 16-core H100 machine; A/B runs (scripts/cpu_switches_ab.py) move them.

``HETDB_CPU_TUNE`` sets them for a process: comma-separated ``name=value`` with value an integer, an
integer with ``k`` (x1024) or ``M`` (x1024^2), or ``off`` (never reached: the path is switched off).
``values`` holds the current ones (tests and A/B scripts change them at run time: ``override``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

OFF = 1 << 62  # a threshold no input reaches

# name -> (default, what reaching it does; the value before session 12 where it changed then)
KNOBS: dict[str, tuple[int, str]] = {
    "parallel_merge_rows": (1 << 18, "partial-state rows from which an aggregation's final merge is "
                                     "partitioned over the worker pool (exec/operators/aggregate_parallel.py; "
                                     "before session 12: off)"),
    "merge_small_domain": (1 << 18, "an aggregation with one integer group key whose values span fewer than "
                                    "this many keeps the one final merge (dense numbering, cache-sized)"),
    "merge_parts_per_thread": (2, "partitions per worker thread of the partitioned final merge"),
    "merge_part_rows": (1 << 16, "state rows per partition of the partitioned final merge beyond one per thread"),
    "direct_range_per_row": (8, "a one-integer-key join build gets a direct-indexed table (a slot per key "
                                "value) when its keys span at most this many values per build row "
                                "(backend/cpu/join.py)"),
    "cluster_payload_rows": (1 << 16, "build rows from which a compiled loop's probe of repeated keys reads "
                                      "the build columns from copies in the join table's key order, the "
                                      "matches of a key side by side (codegen/probe_py.py; before session 14: "
                                      "off)"),
    "direct_parallel_rows": (1 << 17, "build rows from which a direct-indexed join table with repeated "
                                      "keys is built by slot ranges on every kernel thread "
                                      "(backend/cpu/join_direct.py; before session 12: off)"),
    "parallel_matrix_rows": (1 << 20, "rows from which a key matrix is filled on every kernel thread "
                                      "(backend/cpu/keys.py; before session 12: off)"),
    "nogil_zero_cells": (1 << 15, "cells from which a compiled group table is zeroed without the GIL "
                                  "(codegen/runtime.py; before session 12: off)"),
    "direct_scan_slots": (1 << 17, "an aggregation whose one key is a scanned integer column spanning at most "
                                   "this many values (zone maps) finds its groups by direct slots, not a hash "
                                   "table (exec/compiled_cpu_kernels.py; TPC-H q15's 100k suppliers at SF 10: "
                                   "1 MiB per worker; before session 13: 0, never)"),
    "result_morsel_rows": (1 << 17, "rows per morsel at least when a previous result is cut among the "
                                    "workers (exec/operators/basic.py; before session 12: 32k)"),
    "result_share_threads": (1, "1: a result of several batches shares the worker threads among them; "
                                "0: each batch is cut for every thread (before session 12)"),
    "small_sink_rows": (1 << 17, "held rows under which a pipeline's finalize (a hash build, an "
                                 "aggregation's merge) runs single-threaded kernels (exec/pipeline.py; "
                                 "before session 12: 32k of input rows)"),
    "small_source_rows": (1 << 17, "source rows under which a lone pipeline worker runs single-threaded "
                                   "kernels (exec/pipeline.py; before session 12: 0, never)"),
    "narrow_scan_rows": (1 << 20, "table rows from which an aggregating compiled loop reads integer columns "
                                  "whose zone maps fit a narrower type from narrow copies of the cached pages "
                                  "(exec/compiled_cpu_narrow.py; before session 15: off)"),
    "small_filter_keys": (1 << 17, "build keys under which a runtime join filter is built on one kernel "
                                   "thread (backend/cpu/join_filter.py; before session 12: 0, never)"),
}


def parse(spec: str) -> dict[str, int]:
    """``name=value,...`` (see the module's docstring) as a dict; unknown names raise ValueError."""
    out: dict[str, int] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or name not in KNOBS:
            raise ValueError(f"HETDB_CPU_TUNE: {item!r} is not name=value with a name among "
                             f"{', '.join(KNOBS)}")
        out[name] = _value(name, text)
    return out


def _value(name: str, text: str) -> int:
    if text == "off":
        return OFF
    scale = {"k": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
    try:
        return int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise ValueError(f"HETDB_CPU_TUNE: {name}={text!r} is not an integer, NNk, NNM or off") from None


values: dict[str, int] = {name: default for name, (default, _) in KNOBS.items()}
values.update(parse(os.environ.get("HETDB_CPU_TUNE", "")))


def get(name: str) -> int:
    """The current value of threshold ``name``."""
    return values[name]


@contextmanager
def override(**changes: int) -> Iterator[None]:
    """Thresholds set to ``changes`` inside the block, restored after it."""
    unknown = set(changes) - set(KNOBS)
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    old = {k: values[k] for k in changes}
    values.update(changes)
    try:
        yield
    finally:
        values.update(old)
