"""Shuffle compression of TPC-H key columns on the CPU: each column is hash-partitioned by its table's
join key for N workers (as an exchange cuts it), each partition encoded with
``hetdb.dist.shuffle_codec.encode_batch`` and decoded again; per column: raw Arrow bytes, bytes on
the wire, ratio, the codecs chosen, encode and decode time (best of ``repeat``) and MB/s of raw data.

    PYTHONPATH=src python scripts/dist_shuffle_codec.py /tmp/dist-sf1/tpch --workers 2 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import pyarrow as pa

from hetdb.dist.exchange import hash_partition
from hetdb.dist.shuffle_codec import decode_batch, encode_batch

# (table, partitioning key, columns measured): the keys TPC-H joins and groups on, and what the
# lineitem-orders join carries
COLUMNS = [
    ("lineitem", "l_orderkey", ["l_orderkey", "l_partkey", "l_suppkey", "l_quantity", "l_extendedprice",
                                "l_shipdate", "l_returnflag"]),
    ("orders", "o_orderkey", ["o_orderkey", "o_custkey", "o_orderdate", "o_orderpriority"]),
    ("partsupp", "ps_partkey", ["ps_partkey", "ps_suppkey", "ps_supplycost"]),
    ("customer", "c_custkey", ["c_custkey", "c_nationkey"]),
    ("part", "p_partkey", ["p_partkey"]),
    ("supplier", "s_suppkey", ["s_suppkey", "s_nationkey"]),
]


def _codecs(layout) -> list[str]:
    out = [f"{layout.kind}:{name}={s.codec}" for name, s in layout.sections.items()]
    if layout.dictionary is not None:
        out += _codecs(layout.dictionary)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import hetdb

    con = hetdb.connect(args.db, device="cpu", threads=1)
    rows = []
    print(f"{'column':16} {'raw MB':>8} {'wire MB':>8} {'ratio':>6} {'enc ms':>8} {'dec ms':>8} "
          f"{'enc MB/s':>8} {'dec MB/s':>8}  codecs")
    for table, key, cols in COLUMNS:
        data = con.sql(f"select {', '.join(dict.fromkeys([key, *cols]))}, {key} as __k from {table}").arrow()
        parts = hash_partition(data, ["__k"], args.workers)
        for col in cols:
            pieces = [pa.table({col: p.column(col)}) for p in parts]
            raw = sum(p.nbytes for p in pieces)
            enc_s = dec_s = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                encoded = [encode_batch(p) for p in pieces]
                enc_s = min(enc_s, time.perf_counter() - t0)
                t0 = time.perf_counter()
                decoded = [decode_batch(e) for e in encoded]
                dec_s = min(dec_s, time.perf_counter() - t0)
            assert all(d.equals(p) for d, p in zip(decoded, pieces)), col
            wire = sum(e.nbytes for e in encoded)
            codecs = Counter(c for e in encoded for lay in e.columns for c in _codecs(lay))
            row = {"table": table, "column": col, "rows": data.num_rows, "raw": raw, "wire": wire,
                   "ratio": raw / wire, "encode_s": enc_s, "decode_s": dec_s, "codecs": dict(codecs)}
            rows.append(row)
            print(f"{col:16} {raw / 1e6:8.2f} {wire / 1e6:8.2f} {raw / wire:6.2f} {enc_s * 1e3:8.1f} "
                  f"{dec_s * 1e3:8.1f} {raw / 1e6 / enc_s:8.0f} {raw / 1e6 / dec_s:8.0f}  "
                  f"{', '.join(sorted(codecs))}", flush=True)
    raw, wire = sum(r["raw"] for r in rows), sum(r["wire"] for r in rows)
    keys = [r for r in rows if r["column"].endswith("key")]
    kraw, kwire = sum(r["raw"] for r in keys), sum(r["wire"] for r in keys)
    print(f"all columns: raw {raw / 1e6:.1f} MB -> wire {wire / 1e6:.1f} MB ({raw / wire:.2f}x), encode "
          f"{sum(r['encode_s'] for r in rows):.2f} s, decode {sum(r['decode_s'] for r in rows):.2f} s")
    print(f"key columns (*key): raw {kraw / 1e6:.1f} MB -> wire {kwire / 1e6:.1f} MB ({kraw / kwire:.2f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
