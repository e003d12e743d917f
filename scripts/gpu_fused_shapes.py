"""The dense fused kernels of SSB's query shapes on synthetic data of SSB SF 20's size, without a data set.

    PYTHONPATH=src python scripts/gpu_fused_shapes.py [--rows 120e6] [--page-rows 1048576] [--repeat 10]
        [--shapes q1.1,q2.1,q3.1,q4.1] [--variants q2.1] [--split] [--no-variants | --eager-only | --forms] [--tiles 128x4,256x4]

Per shape (filters, dense probes with the selectivities and payloads of the SSB query, group keys,
aggregates: the spec exec/fusion.py makes for it) over random columns split into pages of
``--page-rows`` (one page table, as a hot scan of resident pages): the kernel's own time (CUDA events,
median of ``--repeat`` launches), the bytes of its input columns per second of it, its registers,
and the host time of one ``new_state`` + ``consume_pages`` + ``finish`` (what the engine calls per
run, the kernel included; with ``--split`` its parts, and the kernel's time by events inside the
cycle next to its time replayed alone). Every shape also with the columns eager_columns picks loaded at each
tile's start (spec ``eager``: experiment ``fused_eager``), with its payloads read by key (DenseProbe
``by_key``: experiment ``fused_payload_by_key``) and with both. For the shapes in ``--variants``
the kernel again at other block sizes, items per
thread and register caps (gpu_hot_split.tile_variants) and at other grid sizes.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

from hetdb import types as T
from hetdb.backend.gpu.codegen import (
    AGGREGATE,
    AggregateSpec,
    DenseProbe,
    FusedPipelineSpec,
    compile_fused_pipeline,
)
from hetdb.backend.gpu.codegen.generate import eager_columns
from hetdb.backend.gpu.codegen.runtime import DenseJoinTable
from hetdb.plan.expr import Call, ColumnRef, Literal

I32 = T.INT32


def col(cid: str) -> ColumnRef:
    return ColumnRef(I32, cid, False)


def lit(v: int) -> Literal:
    return Literal(I32, v)


def call(op: str, *args) -> Call:
    return Call(T.BOOL if op in ("ge", "le", "lt", "gt", "eq") else I32, op, tuple(args))


# per dimension: (key range, share of keys that join, payload rank domain or 0)
DIMS = {"date": (2557, 1.0, 7), "date93": (2557, 1 / 7, 0), "supp": (40_000, 0.2, 5), "part": (1_000_000, 0.04, 40),
        "cust": (600_000, 0.2, 5), "part2": (1_000_000, 0.4, 0)}


def shapes() -> dict:
    """name -> (spec, [(probe key column, dimension)], columns)."""
    out = {}
    out["q1.1"] = (FusedPipelineSpec(
        (("lo_orderdate", I32), ("lo_quantity", I32), ("lo_extendedprice", I32), ("lo_discount", I32)),
        (call("ge", col("lo_discount"), lit(1)), call("le", col("lo_discount"), lit(3)),
         call("lt", col("lo_quantity"), lit(25))),
        (DenseProbe(col("lo_orderdate")),), (),
        (AggregateSpec("sum", call("mul", col("lo_extendedprice"), col("lo_discount"))),), AGGREGATE),
        [("lo_orderdate", "date93")])
    out["q2.1"] = (FusedPipelineSpec(
        (("lo_partkey", I32), ("lo_suppkey", I32), ("lo_orderdate", I32), ("lo_revenue", I32)), (),
        (DenseProbe(col("lo_suppkey")), DenseProbe(col("lo_partkey"), (("p_brand1@rank", I32),)),
         DenseProbe(col("lo_orderdate"), (("d_year@rank", I32),))),
        (col("d_year@rank"), col("p_brand1@rank")), (AggregateSpec("sum", col("lo_revenue")),), AGGREGATE),
        [("lo_suppkey", "supp"), ("lo_partkey", "part"), ("lo_orderdate", "date")])
    out["q3.1"] = (FusedPipelineSpec(
        (("lo_custkey", I32), ("lo_suppkey", I32), ("lo_orderdate", I32), ("lo_revenue", I32)), (),
        (DenseProbe(col("lo_suppkey"), (("s_nation@rank", I32),)), DenseProbe(col("lo_custkey"), (("c_nation@rank", I32),)),
         DenseProbe(col("lo_orderdate"), (("d_year@rank", I32),))),
        (col("c_nation@rank"), col("s_nation@rank"), col("d_year@rank")), (AggregateSpec("sum", col("lo_revenue")),),
        AGGREGATE),
        [("lo_suppkey", "supp"), ("lo_custkey", "cust"), ("lo_orderdate", "date")])
    out["q4.1"] = (FusedPipelineSpec(
        (("lo_custkey", I32), ("lo_partkey", I32), ("lo_suppkey", I32), ("lo_orderdate", I32), ("lo_revenue", I32),
         ("lo_supplycost", I32)), (),
        (DenseProbe(col("lo_suppkey")), DenseProbe(col("lo_custkey"), (("c_nation@rank", I32),)),
         DenseProbe(col("lo_orderdate"), (("d_year@rank", I32),)), DenseProbe(col("lo_partkey"))),
        (col("d_year@rank"), col("c_nation@rank")),
        (AggregateSpec("sum", call("sub", col("lo_revenue"), col("lo_supplycost"))),), AGGREGATE),
        [("lo_suppkey", "supp"), ("lo_custkey", "cust"), ("lo_orderdate", "date"), ("lo_partkey", "part2")])
    return out


def probe_form_variants(spec: FusedPipelineSpec, probes: list[tuple[str, str]]) -> list[tuple[str, FusedPipelineSpec]]:
    """``spec`` with the probe forms exec/fusion_forms.py plans (bitmaps without payload, int8 codes of
    the rank payloads) and the rest loaded at once after generate.batch_point with streaming loads
    (the default, feature fused_probe_forms); with the experiments fused_probe_bitmaps_first (large
    codes behind their bitmap) and fused_prefetch (the next tile's eager columns prefetched); with
    only the prefetch; both at 8 rows per thread and at 256 threads per block."""
    from hetdb.backend.gpu.codegen.generate import batch_point
    from hetdb.exec.fusion_forms import PREFILTER_BYTES, PREFILTER_MAX_HITS

    hits = [DIMS[d][1] for _, d in probes]

    def form(p, dim: str, first: bool) -> str:
        if not p.payload:
            return "bits"
        size, share, _ = DIMS[dim]
        return "bits_code8" if first and size > PREFILTER_BYTES and share <= PREFILTER_MAX_HITS else "code8"

    def forms(first: bool) -> FusedPipelineSpec:
        s = dataclasses.replace(spec, probes=tuple(dataclasses.replace(p, form=form(p, d, first))
                                                   for p, (_, d) in zip(spec.probes, probes)))
        return dataclasses.replace(s, batch_after=batch_point(s, hits), stream_loads=True)

    full = dataclasses.replace(forms(True), prefetch=True)
    return [("codes, batched, streaming (the default)", forms(False)),
            ("bitmaps first, batched, streaming, prefetched", full),
            ("codes, batched, streaming, prefetched", dataclasses.replace(forms(False), prefetch=True)),
            ("bitmaps first, ... prefetched at 8 rows per thread", dataclasses.replace(full, items=8)),
            ("bitmaps first, ... prefetched at 256 threads", dataclasses.replace(full, block=256))]


RANGES = {"lo_quantity": (1, 51), "lo_discount": (0, 11), "lo_extendedprice": (90_000, 10_000_000),
          "lo_revenue": (80_000, 10_000_000), "lo_supplycost": (50_000, 120_000)}
KEYS = {"lo_orderdate": "date", "lo_suppkey": "supp", "lo_partkey": "part", "lo_custkey": "cust"}


def main(argv: list[str] | None = None) -> int:
    import cupy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=120e6)
    ap.add_argument("--page-rows", type=int, default=1 << 20)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--shapes", default="q1.1,q2.1,q3.1,q4.1")
    ap.add_argument("--variants", default="", help="shapes whose kernel is also run at other grids and tile shapes")
    ap.add_argument("--split", action="store_true", help="the cycle's parts: new_state, consume_pages (host), the "
                    "wait for the kernel, finish; the kernel's time by events inside the cycle")
    ap.add_argument("--no-variants", action="store_true", help="skip the eager / payload-by-key variants")
    ap.add_argument("--eager-only", action="store_true", help="of those, only the eager one (loaded first)")
    ap.add_argument("--tiles", default="", help="the tile variants of --variants (gpu_hot_split.py --tiles)")
    ap.add_argument("--forms", action="store_true", help="each shape as planned before the probe forms (the columns "
                    "most rows need loaded first) against the variants of the feature fused_probe_forms (now the "
                    "default: probe_form_variants), instead of the eager / payload-by-key variants")
    args = ap.parse_args(argv)
    n = int(args.rows)
    rng = cupy.random.default_rng(7)
    cols: dict[str, object] = {}

    def column(cid: str):
        if cid not in cols:
            if cid in KEYS:
                cols[cid] = rng.integers(0, DIMS[KEYS[cid]][0], n, dtype=cupy.int32)
            else:
                lo, hi = RANGES[cid]
                cols[cid] = rng.integers(lo, hi, n, dtype=cupy.int32)
        return cols[cid]

    def table(dim: str) -> DenseJoinTable:
        size, share, ranks = DIMS[dim]
        keep = rng.random(size) < share
        rows = cupy.where(keep, cupy.arange(size, dtype=cupy.int32), -1).astype(cupy.int32)
        payload = [rng.integers(0, ranks, size, dtype=cupy.int32)] if ranks else []
        return DenseJoinTable(rows, 0, size, payload, int(keep.sum()))

    import gpu_hot_split as split

    probe = split.LaunchTimes()
    dev = cupy.cuda.Device()
    print(f"device {cupy.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}  rows {n:,}  "
          f"page rows {args.page_rows:,}", flush=True)
    for name, (spec, probes) in ((k, v) for k, v in shapes().items() if k in args.shapes.split(",")):
        if args.forms:  # (the spec planned before the probe forms: the columns most rows need loaded first)
            spec = dataclasses.replace(spec, eager=eager_columns(spec, [DIMS[d][1] for _, d in probes]))
        fp = compile_fused_pipeline(spec)
        tables = []
        for (_, dim), p in zip(probes, spec.probes):
            t = table(dim)
            if not p.payload:
                t.payload = []
            tables.append(t)
        arrays = {cid: column(cid) for cid, _ in spec.inputs}
        pages = [(min(args.page_rows, n - lo), {cid: a[lo:lo + args.page_rows] for cid, a in arrays.items()})
                 for lo in range(0, n, args.page_rows)]
        pt = fp.page_table(pages)
        domains = []
        for g in spec.group_keys:
            dim = next(d for (_, d), p in zip(probes, spec.probes) if any(c == g.cid for c, _ in p.payload))
            domains.append((0, DIMS[dim][2] - 1))
        nbytes = sum(int(a.nbytes) for a in arrays.values())
        hosts = []
        parts: list[tuple[float, float, float, float]] = []  # new_state, consume_pages, wait, finish
        stream = cupy.cuda.get_current_stream()
        for _ in range(args.repeat + 2):
            stream.synchronize()
            probe.active = True
            t = time.perf_counter()
            state = fp.new_state(domains)
            t1 = time.perf_counter()
            fp.consume_pages(state, pt, tables)
            t2 = time.perf_counter()
            if args.split:
                stream.synchronize()  # (the kernel's end: what finish would wait for)
            t3 = time.perf_counter()
            result = fp.finish(state, host=fp.finishes_on_host(state))  # (as a hot query's host tail)
            t4 = time.perf_counter()
            hosts.append(t4 - t)
            parts.append((t1 - t, t2 - t1, t3 - t2, t4 - t3))
            probe.active = False
        kms, launches, _ = probe.take()
        if args.split:
            med = [statistics.median(p[i] for p in parts[2:]) * 1e3 for i in range(4)]
            print(f"{name}: in the cycle: new_state {med[0]:.3f} ms, consume_pages {med[1]:.3f} (host), wait for "
                  f"the kernel {med[2]:.3f}, finish {med[3]:.3f}; kernel by events {kms / len(parts):.3f} ms per "
                  f"cycle ({launches} launches)", flush=True)
        launch = probe.last[fp.kernel.name]
        own = statistics.median(split.replay(probe, launch, launch[1], 1) for _ in range(args.repeat))
        fn, grid, block, _, shared = launch
        print(f"{name}: kernel {own:.3f} ms ({nbytes / own / 1e6:.0f} GB/s of {nbytes / 1e6:.0f} MB of columns) "
              f"grid {grid} x {block}, shared {shared} B, {split.occupancy(fn, block, shared)}; "
              f"new_state + consume_pages + finish {statistics.median(hosts[2:]) * 1e3:.3f} ms; "
              f"{result.num_groups} groups", flush=True)
        eager = eager_columns(spec, [DIMS[d][1] for _, d in probes])
        keyed = tuple(dataclasses.replace(p, by_key=bool(p.payload)) for p in spec.probes)
        variants = [("loaded first " + ", ".join(eager), dataclasses.replace(spec, eager=eager)),
                    ("payload by key", dataclasses.replace(spec, probes=keyed)),
                    ("both", dataclasses.replace(spec, eager=eager, probes=keyed))]
        if args.forms:
            variants = probe_form_variants(spec, probes)
        for label, other in variants:
            if other == spec or (args.no_variants and not args.forms) or \
                    (args.eager_only and not label.startswith("loaded first")):
                continue
            ofp = compile_fused_pipeline(other)
            ostate = ofp.new_state(domains)
            opt = pt if ofp.tile == fp.tile else ofp.page_table(pages)  # (tiles of other rows: re-tiled)
            times = []
            for _ in range(args.repeat + 1):
                probe.active = True
                ofp.consume_pages(ostate, opt, tables)
                probe.active = False
                times.append(probe.take()[0])
            ems = statistics.median(times[1:])
            ogrid = probe.last[ofp.kernel.name][1] if ofp.kernel.name in probe.last else "?"
            print(f"    {label}: {ems:.3f} ms ({nbytes / ems / 1e6:.0f} GB/s), grid {ogrid} x {ofp.block}, "
                  f"{split.occupancy(ofp.function(), ofp.block, shared)}", flush=True)
        if name in args.variants.split(","):
            grids = sorted({132, 264, 528, 1056, 1584, 2112, 4224, 65536} - {grid})
            print("    other grids: " + ", ".join(f"{g}: {split.replay(probe, launch, g, 5):.3f}" for g in grids),
                  flush=True)
            print(split.tile_variants(probe, fp.kernel.name, launch, 5, split.parse_tiles(args.tiles)), flush=True)
        probe.last.clear()
        del pages, pt
    return 0


if __name__ == "__main__":
    sys.exit(main())
