"""Compression ratios from the manifests of a database written by `hetdb generate` (no data is read):
per referenced column of the suite's fact tables, and per query the total of the columns it
references (fact table alone, and every table).

A column's *stored* bytes are its pages' meaningful bytes (manifest ``length``: the encoded page) and
its *plain* bytes are the same pages decoded (manifest ``decoded``); a string column's shared
dictionary counts on both sides. Padding to 4 KiB is left out of both (it is a property of the page
size, not of the encoding); ``--padded`` counts the bytes on disk instead.

Usage: python scripts/codec_ratios.py DB SUITE [--tables lineorder,...] [--padded] [--json OUT]
"""

from __future__ import annotations

import argparse
import json

import sqlglot
from sqlglot import exp

from hetdb.bench.datasets import table_columns
from hetdb.bench.suites import get_suite, load_queries
from hetdb.storage import Database

FACT_TABLES = {"ssb": ("lineorder",), "tpch": ("lineitem", "orders")}


def referenced_columns(sql: str, schema: dict[str, list[str]]) -> dict[str, list[str]]:
    """{table: [columns]} the query reads, as ``hetdb.bench.suites.referenced_columns`` finds them but
    for ``SELECT *`` under EXISTS, which reads no column (TPC-H q4, q21, q22: counting every column of
    lineitem/orders there would put their comments into the totals)."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    tables = {t.name for t in tree.find_all(exp.Table) if t.name in schema and t.name not in ctes}
    names = {c.name for c in tree.find_all(exp.Column)}
    star = any(isinstance(e, exp.Star) for s in tree.find_all(exp.Select) if s.find_ancestor(exp.Exists) is None
               for e in s.expressions)
    out = {t: list(schema[t]) if star else [c for c in schema[t] if c in names] for t in sorted(tables)}
    return {t: cols for t, cols in out.items() if cols}


def column_sizes(reader, column: str, padded: bool) -> dict:
    """{plain, stored, codecs} of one column from its manifest entries."""
    stored = plain = 0
    codecs: dict[str, int] = {}
    for rg in range(reader.num_row_groups):
        loc = reader.page_location(column, rg)
        stored += loc.padded_length if padded else loc.length
        plain += reader.decoded_bytes(column, rg)
        c = reader.page_codec(column, rg)
        codecs[c] = codecs.get(c, 0) + 1
    pages_on_disk = sum(reader.page_location(column, rg).padded_length for rg in range(reader.num_row_groups))
    dictionary = reader.bytes_on_disk(column) - pages_on_disk
    return {"plain": plain + dictionary, "stored": stored + dictionary, "codecs": codecs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("suite", choices=sorted(FACT_TABLES))
    ap.add_argument("--tables", help="comma-separated fact tables (default: lineorder / lineitem,orders)")
    ap.add_argument("--padded", action="store_true", help="stored bytes = pages on disk, 4 KiB padded")
    ap.add_argument("--json", help="also write every number to this file")
    args = ap.parse_args()
    db = Database.open(args.db)
    suite = get_suite(args.suite)
    facts = tuple(args.tables.split(",")) if args.tables else FACT_TABLES[args.suite]
    schema = table_columns(db, suite.tables)
    readers = {t: db.table(t) for t in suite.tables}
    sizes = {t: {c: column_sizes(readers[t], c, args.padded) for c in cols} for t, cols in schema.items()}
    queries = load_queries(args.suite)
    refs = {q.name: referenced_columns(q.sql, schema) for q in queries}
    mib = 1 << 20

    def ratio(plain: int, stored: int) -> str:
        return f"{plain / stored:6.2f}x" if stored else "     -"

    out: dict = {"db": args.db, "suite": args.suite, "padded": args.padded, "columns": {}, "queries": {}}
    for t in facts:
        used = sorted({c for r in refs.values() for c in r.get(t, [])}, key=schema[t].index)
        print(f"## {t}: {readers[t].num_rows:,} rows, {readers[t].num_row_groups} pages per column")
        print(f"{'column':20s} {'plain MiB':>10s} {'stored MiB':>10s} {'ratio':>7s}  encodings (pages)  queries")
        for c in schema[t]:
            s = sizes[t][c]
            qs = [q for q, r in refs.items() if c in r.get(t, [])]
            enc = " ".join(f"{k}:{v}" for k, v in sorted(s["codecs"].items(), key=lambda e: -e[1]))
            mark = "" if c in used else "   (not referenced)"
            print(f"{c:20s} {s['plain'] / mib:10.2f} {s['stored'] / mib:10.2f} {ratio(s['plain'], s['stored'])}"
                  f"  {enc:18s} {len(qs)}{mark}")
            out["columns"][f"{t}.{c}"] = {**s, "queries": qs}
        tp = sum(sizes[t][c]["plain"] for c in schema[t])
        ts = sum(sizes[t][c]["stored"] for c in schema[t])
        up = sum(sizes[t][c]["plain"] for c in used)
        us = sum(sizes[t][c]["stored"] for c in used)
        print(f"{'all columns':20s} {tp / mib:10.2f} {ts / mib:10.2f} {ratio(tp, ts)}")
        print(f"{'referenced columns':20s} {up / mib:10.2f} {us / mib:10.2f} {ratio(up, us)}\n")
    print(f"{'query':6s} {'fact plain':>10s} {'stored':>8s} {'ratio':>7s}   {'all plain':>10s} {'stored':>8s} "
          f"{'ratio':>7s}  (MiB; fact = {', '.join(facts)}; all = every table the query reads)")
    sums = [0, 0, 0, 0]
    for q, r in refs.items():
        fp = sum(sizes[t][c]["plain"] for t in facts for c in r.get(t, []))
        fs = sum(sizes[t][c]["stored"] for t in facts for c in r.get(t, []))
        ap_ = sum(sizes[t][c]["plain"] for t, cols in r.items() for c in cols)
        as_ = sum(sizes[t][c]["stored"] for t, cols in r.items() for c in cols)
        for i, v in enumerate((fp, fs, ap_, as_)):
            sums[i] += v
        print(f"{q:6s} {fp / mib:10.2f} {fs / mib:8.2f} {ratio(fp, fs)}   {ap_ / mib:10.2f} {as_ / mib:8.2f} "
              f"{ratio(ap_, as_)}")
        out["queries"][q] = {"fact_plain": fp, "fact_stored": fs, "all_plain": ap_, "all_stored": as_,
                             "columns": r}
    print(f"{'total':6s} {sums[0] / mib:10.2f} {sums[1] / mib:8.2f} {ratio(sums[0], sums[1])}   "
          f"{sums[2] / mib:10.2f} {sums[3] / mib:8.2f} {ratio(sums[2], sums[3])}  (sum over the queries)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
