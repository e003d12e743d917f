"""A plain-string probe key in a generated pipeline kernel *run* without a GPU (the g++ harness of
pipeline_host.py): each row's string is hashed and looked up in the join build's table of
strings (string_hash.cuh string_key_id over the tables backend/gpu/string_keys.py builds, here with
string_keys.cu built as a host library), per batch and paged. Strings the build lacks and NULL probe
keys match nothing; non-unique build keys expand; empty strings and multi-byte code points match."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
from pipeline_host import by_key, col, join_table, run_kernel
from test_gpu_string_keys_host_run import HostKernels, build_library

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_spec import AggregateSink, Input, PipelineSpec, ProbeStage
from hetdb.backend.gpu.string_keys import DeviceStringIds
from hetdb.plan.expr import ColumnRef


def _column(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    data = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(data), np.uint8).copy()


def test_plain_string_probe_key_looks_up_the_builds_table(tmp_path) -> None:
    rng = random.Random(5)
    build_strings = ["c", "a", "x" * 20, "c", None, "é", "", "a\0"]
    # the build's key ids, as its encoder made them on the device (the tables the kernel reads)
    ids = DeviceStringIds(np, HostKernels(build_library(tmp_path)))
    present = [v for v in build_strings if v is not None]
    build_ids, _ = ids.map(*_column(present), add=True)
    id_of = dict(zip(present, build_ids.tolist()))
    off, chars, hashes, slots, _ = ids.table_args()
    table_of_strings = {"off": off[:ids.count + 1], "chr": chars, "hash": hashes[:max(ids.count, 1)], "slots": slots}
    words = ["a", "b", "c", "x" * 20, "x" * 19, "é", "e", "", "a\0", "a\0\0"]
    n = 1100
    s = [None if rng.random() < 0.1 else rng.choice(words) for _ in range(n)]
    g = [rng.randint(0, 4) for _ in range(n)]
    w = [rng.randint(1, 9) for _ in build_strings]
    spec = PipelineSpec((Input("s", T.STRING, True), Input("g", T.INT64, False)),
                        (ProbeStage("inner", (ColumnRef(T.STRING, "s", True),), (T.STRING,),
                                    (Input("w", T.INT64, False),)),),
                        AggregateSink((col("g"),), (("count_star", None), ("sum", col("w")))))
    kernel = generate_pipeline(spec)
    assert [lk.plain for lk in kernel.lookups] == [True] and "string_key_id(chr0 + off0[row]" in kernel.body
    table = join_table([(None if v is None else id_of[v],) for v in build_strings])
    got = by_key(run_kernel(spec, {"s": s, "g": g}, [(table, [w])], tmp_path, luts=[table_of_strings]))
    assert by_key(run_kernel(spec, {"s": s, "g": g}, [(table, [w])], tmp_path, luts=[table_of_strings],
                             pages=(300, 1, 799))) == got
    want: dict = defaultdict(lambda: [0, 0, 0])
    for x, gg in zip(s, g):
        for b, ww in zip(build_strings, w):
            if x is not None and b is not None and x == b:
                r = want[(gg,)]
                r[0] += 1
                r[1] += ww
                r[2] += 1
    assert got == dict(want) and len(want) == 5
