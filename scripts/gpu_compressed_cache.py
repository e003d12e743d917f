"""Device bytes held and hot query time with ``gpu_compressed_cache`` off vs on (issue 8: pages stay
compressed in the device cache and kernels decode them in place).

Usage (on a GPU machine, from the repository root):
    PYTHONPATH=src python scripts/gpu_compressed_cache.py DB [--sf 20] [--repeat 5] [--out DIR]

DB is an SSB database (made with ``hetdb generate ssb --sf SF DB`` when it does not exist). For each
setting, one connection runs the 13 SSB queries once (filling the device cache), then ``--repeat``
more times; the hot time of a query is the median of those runs (wall clock, result on the host).
Afterwards the script reports the device cache's bytes and entries (how many kept compressed), per
query how many kept-compressed pages a hot run decoded whole outside the generated kernels (an
operator-at-a-time consumer: DevicePage.decode), and checks that both settings give the same
answers. Prints a table; with --out writes compressed_cache.json there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import hetdb
from hetdb.storage import Database

QUERIES = Path(hetdb.__file__).parent / "bench" / "queries" / "ssb"


def _count_page_decodes() -> list[int]:
    """Count whole-page decodes of pages kept compressed (DevicePage.decode: an operator that is not
    a generated kernel read such a page's values), as [calls, decoded bytes]."""
    from hetdb.backend.gpu.encoded import DevicePage

    counter = [0, 0]
    decode = DevicePage.decode

    def counted(self):
        counter[0] += 1
        counter[1] += self.n * self.dtype.itemsize
        return decode(self)

    DevicePage.decode = counted
    return counter


DECODES = _count_page_decodes()


def run_setting(db: str, compressed: bool, repeat: int) -> dict:
    queries = {p.stem: p.read_text() for p in sorted(QUERIES.glob("q*.sql"))}
    out: dict = {"gpu_compressed_cache": compressed, "queries": {}, "answers": {}, "page_decodes": {}}
    with hetdb.connect(db, device="gpu", gpu_compressed_cache=compressed) as con:
        for name, sql in queries.items():  # first pass: pages into the device cache
            out["answers"][name] = con.sql(sql).arrow()
        for name, sql in queries.items():
            times = []
            before = DECODES[0]
            for _ in range(repeat):
                start = time.perf_counter()
                con.sql(sql).arrow()
                times.append(time.perf_counter() - start)
            out["queries"][name] = statistics.median(times) * 1e3
            out["page_decodes"][name] = (DECODES[0] - before) / repeat
        cache = con._get_engine().device.cache
        entries = [cache.peek_many([k])[0] for k in cache.keys()]
        out["device_cache_bytes"] = cache.used_bytes
        out["device_cache_entries"] = len(entries)
        out["compressed_entries"] = sum(getattr(e, "device_page", None) is not None for e in entries)
        out["device_cache_capacity"] = cache.capacity_bytes
        out["evictions"] = cache.stats.evictions
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--sf", type=float, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    if not Path(args.db, "hetdb.json").is_file():
        from hetdb.datagen import ssb

        print(f"generating SSB SF {args.sf} into {args.db} ...", flush=True)
        ssb.generate(Database.open(args.db, create=True), args.sf, progress=True)
    runs = {on: run_setting(args.db, on, args.repeat) for on in (False, True)}
    off, on = runs[False], runs[True]
    mismatched = [q for q in off["answers"] if not off["answers"][q].equals(on["answers"][q])]
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    print(f"SSB {args.db} on {device}, hot = median of {args.repeat} runs after one filling run")
    print(f"{'query':<8} {'off ms':>9} {'on ms':>9} {'on/off':>7} {'on: page decodes outside kernels/run':>38}")
    for q in off["queries"]:
        a, b = off["queries"][q], on["queries"][q]
        print(f"{q:<8} {a:>9.2f} {b:>9.2f} {b / a:>7.2f} {on['page_decodes'][q]:>38.1f}")
    geo = statistics.geometric_mean([on["queries"][q] / off["queries"][q] for q in off["queries"]])
    print(f"geomean on/off: {geo:.3f}")
    for label, r in (("off", off), ("on", on)):
        print(f"device cache {label}: {r['device_cache_bytes'] / 2**30:.3f} GiB in {r['device_cache_entries']} "
              f"entries ({r['compressed_entries']} compressed), capacity {r['device_cache_capacity'] / 2**30:.1f} GiB, "
              f"{r['evictions']} evictions")
    print(f"device bytes on/off: {on['device_cache_bytes'] / max(off['device_cache_bytes'], 1):.3f}")
    print("answers: " + ("identical" if not mismatched else f"DIFFER in {', '.join(mismatched)}"))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        report = {str(k): {x: y for x, y in v.items() if x != "answers"} for k, v in runs.items()}
        report.update(device=device, db=args.db, repeat=args.repeat, geomean_on_over_off=geo, mismatched=mismatched)
        Path(args.out, "compressed_cache.json").write_text(json.dumps(report, indent=2))
    if mismatched:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
