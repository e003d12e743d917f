"""One-GPU shuffle benchmark: the keys of TPC-H lineitem ⋈ orders (l_orderkey; o_orderkey with
o_orderpriority as dictionary codes) hash-partitioned on the GPU into 2, 4 and 8 partitions as an
exchange cuts them, every partition encoded on the GPU (``hetdb.dist.gpu_shuffle.encode_partitions``:
one packing launch for all columns and partitions) and decoded on the device (``decode_device``),
checked against the gathered input; the same partitions encoded and decoded on the host
(``shuffle_codec``) for comparison. Reports bytes raw vs on the wire, GB/s of GPU encode and decode
and host encode/decode (best of ``--repeat``). No Ray, one GPU:

    PYTHONPATH=src python3 scripts/gpu_shuffle_bench.py /tmp/hetdb-bench/tpch-sf1 --parts 2 4 8
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pyarrow as pa


def _best(fn, repeat: int):
    import cupy

    best, out = float("inf"), None
    for _ in range(repeat):
        cupy.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        out = fn()
        cupy.cuda.get_current_stream().synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _load(db: str) -> dict[str, pa.Table]:
    import hetdb

    con = hetdb.connect(db, device="cpu")
    try:
        return {"lineitem": con.sql("select l_orderkey from lineitem").arrow(),
                "orders": con.sql("select o_orderkey, o_orderpriority from orders").arrow()}
    finally:
        con.close()


def _device_columns(table: pa.Table):
    import cupy

    from hetdb.column import Column
    from hetdb.exec.hostutil import _map_arrays

    out = []
    for name in table.column_names:
        arr = table.column(name).combine_chunks()
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            arr = arr.dictionary_encode()
        out.append((name, _map_arrays(Column.from_arrow(arr), cupy.asarray, {})))
    return out


def _gpu_partition(key, parts: int):
    """(row order, bounds) of the rows by their partition: ids from the GPU hash, a sort of
    (id, row) so rows keep their order inside a partition."""
    import cupy

    from hetdb.backend.gpu.shuffle_encode import partition_ids

    ids = partition_ids([key], [None], parts)
    n = int(key.shape[0])
    composite = (ids.astype(cupy.int64) << 40) | cupy.arange(n, dtype=cupy.int64)
    order = cupy.sort(composite) & ((1 << 40) - 1)
    counts = cupy.asnumpy(cupy.bincount(ids, minlength=parts))
    return order, [0, *np.cumsum(counts).tolist()], ids


def _measure(name: str, table: pa.Table, parts: int, repeat: int) -> dict:
    import cupy

    from hetdb.backend.gpu.decode import decode_device
    from hetdb.dist.exchange import partition_ids as host_partition_ids
    from hetdb.dist.gpu_shuffle import encode_partitions
    from hetdb.dist.shuffle_codec import decode_arrays, decode_batch, encode_batch

    cols = _device_columns(table)
    key = cols[0][1].data
    part_s, (order, bounds, ids) = _best(lambda: _gpu_partition(key, parts), repeat)
    host_ids = host_partition_ids(table, [table.column_names[0]], parts)
    assert np.array_equal(cupy.asnumpy(ids), host_ids), "GPU partition ids differ from the host's"
    raw_dev = sum(int(c.data.nbytes) for _, c in cols)
    enc_s, batches = _best(lambda: encode_partitions(cols, order, bounds, True), repeat)
    plain_s, plain = _best(lambda: encode_partitions(cols, order, bounds, False), repeat)
    wire = sum(b.nbytes for b in batches)
    payload = sum(int(b.payload.nbytes) for b in batches)

    def decode_all():
        return [decode_arrays(b, payload=b.payload, decode_fn=decode_device) for b in batches]

    dec_s, decoded = _best(decode_all, repeat)
    for p, got in enumerate(decoded):  # every column of every partition equals the gathered input
        rows = order[bounds[p]:bounds[p + 1]]
        for (_, col), bufs in zip(cols, got):
            want = col.data[rows]
            have = bufs["codes"] if "codes" in bufs else bufs["values"]
            assert bool(cupy.array_equal(have.view(want.dtype), want)), (name, parts, p)
    codecs = sorted({f"{c.type}:{k}={s.codec}" for b in batches for c in b.columns for k, s in c.sections.items()})
    # the host path on the same partitions (Arrow tables, as a CPU worker sends them)
    h_order = cupy.asnumpy(order)
    pieces = [table.take(pa.array(h_order[bounds[p]:bounds[p + 1]])) for p in range(parts)]
    raw_arrow = sum(t.nbytes for t in pieces)
    h_enc_s, h_batches = _best(lambda: [encode_batch(t) for t in pieces], max(1, repeat // 2))
    h_dec_s, h_tables = _best(lambda: [decode_batch(b) for b in h_batches], max(1, repeat // 2))
    assert all(a.equals(b) for a, b in zip(h_tables, pieces))
    h_wire = sum(b.nbytes for b in h_batches)
    return {"table": name, "parts": parts, "rows": table.num_rows, "raw_device_bytes": raw_dev,
            "wire_bytes": wire, "payload_bytes": payload, "ratio": raw_dev / wire,
            "partition_s": part_s, "gpu_encode_s": enc_s, "gpu_encode_gbs": raw_dev / enc_s / 1e9,
            "gpu_plain_s": plain_s, "gpu_plain_wire": sum(b.nbytes for b in plain),
            "gpu_decode_s": dec_s, "gpu_decode_gbs": raw_dev / dec_s / 1e9, "codecs": codecs,
            "host_raw_arrow_bytes": raw_arrow, "host_wire_bytes": h_wire, "host_ratio": raw_arrow / h_wire,
            "host_encode_s": h_enc_s, "host_encode_gbs": raw_arrow / h_enc_s / 1e9,
            "host_decode_s": h_dec_s, "host_decode_gbs": raw_arrow / h_dec_s / 1e9}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--parts", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the rows here (default: $OUT/gpu_shuffle_bench.json when $OUT is set)")
    args = ap.parse_args(argv)
    import cupy

    t0 = time.perf_counter()
    tables = _load(args.db)
    print(f"loaded {', '.join(f'{k} {v.num_rows:,} rows' for k, v in tables.items())} in "
          f"{time.perf_counter() - t0:.1f} s; GPU {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    _measure("orders", tables["orders"].slice(0, 50_000), 2, 1)  # compiles the kernels
    rows = []
    print(f"{'table':9} {'parts':>5} {'raw MB':>8} {'wire MB':>8} {'ratio':>6} {'part ms':>8} {'enc ms':>7} "
          f"{'enc GB/s':>8} {'dec ms':>7} {'dec GB/s':>8} | {'host wire':>9} {'h enc ms':>8} {'h GB/s':>7} "
          f"{'h dec ms':>8}  codecs")
    for parts in args.parts:
        for name in ("lineitem", "orders"):
            r = _measure(name, tables[name], parts, args.repeat)
            rows.append(r)
            print(f"{name:9} {parts:5} {r['raw_device_bytes'] / 1e6:8.1f} {r['wire_bytes'] / 1e6:8.2f} "
                  f"{r['ratio']:6.2f} {r['partition_s'] * 1e3:8.2f} {r['gpu_encode_s'] * 1e3:7.2f} "
                  f"{r['gpu_encode_gbs']:8.1f} {r['gpu_decode_s'] * 1e3:7.2f} {r['gpu_decode_gbs']:8.1f} | "
                  f"{r['host_wire_bytes'] / 1e6:9.2f} {r['host_encode_s'] * 1e3:8.1f} "
                  f"{r['host_encode_gbs']:7.2f} {r['host_decode_s'] * 1e3:8.1f}  {', '.join(r['codecs'])}",
                  flush=True)
        both = [r for r in rows if r["parts"] == parts]
        raw, wire = sum(r["raw_device_bytes"] for r in both), sum(r["wire_bytes"] for r in both)
        enc = sum(r["gpu_encode_s"] for r in both)
        host = sum(r["host_encode_s"] for r in both)
        print(f"join keys, {parts} partitions: {raw / 1e6:.1f} MB -> {wire / 1e6:.2f} MB ({raw / wire:.1f}x); "
              f"GPU encode {enc * 1e3:.2f} ms vs host {host * 1e3:.0f} ms ({host / enc:.0f}x)", flush=True)
    out = args.json or (os.path.join(os.environ["OUT"], "gpu_shuffle_bench.json") if os.environ.get("OUT") else None)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
