"""Hot GPU queries under a memory budget that keeps pages compressed: kernel and placement variants
A/B in one process.

    PYTHONPATH=src python scripts/encoded_kernels_ab.py DB [--suite ssb] [--queries q1.1,...]
        [--warmup 2] [--runs 3] [--limit BYTES] [--compressed auto|on] [--variant NAME:k=v,k=v ...]

Each variant is one GPU connection with ``gpu_memory_limit`` ``--limit`` and ``gpu_compressed_cache``
``--compressed`` plus its own options (``hetdb bench --set`` syntax; ``gpu_memory_limit=none`` in a
variant: no limit; ``page_variants=0``: the fused kernel for any page encoding, not the variant per
page encodings, codegen/runtime.PAGE_VARIANTS, while that variant runs). The queries run hot,
variants interleaved per query (``--warmup`` untimed runs each, then ``--runs`` timed; median exec ms
and, when a timed run copied pages, the median MB copied host -> device), with
each variant's answer checked against the last variant's (unlimited by default: pages decoded),
the geometric means at the end, each variant's columns kept decoded (cache/placement.py) and every
fused kernel compiled over compressed pages: its page encodings, registers, local (spill) bytes and
whether the register cap (gpu_encoded_min_blocks) was kept.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

from scripts_common import parse_options

import hetdb
from hetdb.bench.suites import load_queries

# main before: every page compressed, the kernel for any encoding, uncapped; this branch's parts
DEFAULT_VARIANTS = ["old:page_variants=0,gpu_encoded_min_blocks=0,gpu_decoded_placement=false",
                    "var:gpu_encoded_min_blocks=0,gpu_decoded_placement=false",
                    "var8:gpu_decoded_placement=false", "place8:gpu_decoded_placement=true",
                    "unlimited:gpu_memory_limit=none"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="all")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs per query and variant (gpu_cache_admission "
                    "'reuse': the first passes through, the second fills the cache)")
    ap.add_argument("--limit", type=int, default=8 << 30, help="gpu_memory_limit of each connection")
    ap.add_argument("--compressed", default="auto", choices=["auto", "on"], help="gpu_compressed_cache")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--stop-after", type=float, default=0.0,
                    help="seconds: start no further query after them (the geomeans cover those done)")
    args = ap.parse_args(argv)
    from hetdb.backend.gpu.codegen import runtime

    names = None if args.queries == "all" else args.queries.split(",")
    queries = [(q.name, q.sql) for q in load_queries(args.suite, names)]
    variants = []
    for spec in args.variant or DEFAULT_VARIANTS:
        name, _, opts = spec.partition(":")
        pairs = [o for o in opts.split(",") if o]
        pv = all(p != "page_variants=0" for p in pairs)
        options = {"gpu_compressed_cache": True if args.compressed == "on" else "auto", "gpu_memory_limit": args.limit,
                   **parse_options([p for p in pairs if not p.startswith("page_variants")])}
        con = hetdb.connect(args.db, device="gpu", create=False, **options)
        variants.append((name, pv, con))
    print(f"{len(queries)} queries x {len(variants)} variants, {args.runs} hot runs each (median exec ms)", flush=True)
    started = time.monotonic()
    times: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    mismatches: list[str] = []
    for qname, sql in queries:
        if args.stop_after and time.monotonic() - started > args.stop_after:
            print(f"stopped after {time.monotonic() - started:.0f} s (--stop-after)", flush=True)
            break
        line = []
        answers = {}
        for name, pv, con in variants:
            runtime.PAGE_VARIANTS = pv
            for _ in range(args.warmup):
                con.sql(sql).fetchall()
            got, moved = [], []
            for _ in range(args.runs):
                res = con.sql(sql)
                rows = res.fetchall()
                got.append(res.stats["exec_seconds"] * 1e3)
                moved.append(int(res.stats.get("bytes_host_to_device") or 0))
            answers[name] = sorted(map(repr, rows))
            times[name].append(statistics.median(got))
            line.append(f"{name} {times[name][-1]:.3f}" + (f" ({statistics.median(moved) / 1e6:.0f} MB)"
                                                            if any(moved) else ""))
        reference = variants[-1][0]  # (the last variant's answer: unlimited by default, pages decoded)
        wrong = [name for name, rows in answers.items() if rows != answers[reference]]
        if wrong:
            mismatches.append(f"{qname}: {', '.join(wrong)}")
        print(f"{qname}: " + "  ".join(line) + (f"  ANSWER DIFFERS from {reference}: {', '.join(wrong)}"
                                                 if wrong else ""), flush=True)
    runtime.PAGE_VARIANTS = True
    print(f"answers vs the last variant's: {'; '.join(mismatches) or 'all equal'}", flush=True)
    for name, _, con in variants:
        geo = math.exp(sum(map(math.log, times[name])) / max(1, len(times[name])))
        device = con._get_engine().device
        decoded = {t: sorted(c) for t, c in device.placement_map.items()}
        print(f"geomean {name}: {geo:.3f} ms over {len(times[name])} queries  (decoded: {decoded or '-'})",
              flush=True)
        con.close()
    print("kernels (page encodings per input; registers, local bytes, capped):")
    seen = set()
    for fp in list(runtime._PIPELINES.values()):
        for v in [fp, *fp._variants.values()]:
            fn = v._function
            if fn is None or not v.spec.encoded or v.kernel.name in seen:
                continue
            seen.add(v.kernel.name)
            print(f"  {v.kernel.name} {','.join(v.spec.input_codecs) or 'any'} min_blocks {v.spec.min_blocks}: "
                  f"{getattr(fn, 'num_regs', '?')} regs, {getattr(fn, 'local_size_bytes', '?')} B local, "
                  f"capped {v.capped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
