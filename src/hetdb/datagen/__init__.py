"""Benchmark data generators writing into hetdb's table store.

- ``ssb``: Star Schema Benchmark (own NumPy generator; rules in shared/benchmarks/ssb.md).
- ``scan``: the scan-benchmark table ``t`` (SF 1 = 10M rows).
- ``tpch``: TPC-H through ``tpchgen-cli``, ingested from Parquet.

Each module's ``generate(db, sf, ...)`` returns rows written per table. Generation is chunked, seeded per
chunk (the same data for any number of workers) and parallel across processes, in bounded memory.
"""
