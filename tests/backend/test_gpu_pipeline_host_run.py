"""Generated pipeline kernels *run* without a GPU: the kernel text plus pipeline.cuh is compiled as a
host C++ program with g++ (CUDA built-ins shimmed sequentially: one thread at a time, atomics as
plain read-modify-writes), join builds are laid out exactly like hashing.GpuJoinTable (normalised key
bits, splitmix64 row hash, linear probing, CSR of build rows per slot), and the groups the kernel
leaves in its hash table are compared with a NumPy/Python reference: non-unique and skewed builds
(all keys equal), empty build, empty probe, NULL keys, semi/anti/mark/left probes, NULL group keys."""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
import struct
import subprocess
from collections import defaultdict

import numpy as np
import pytest
from pipeline_host import SHIM, by_key, c_array, col, join_table, run_kernel

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_spec import (
    AggregateSink,
    FilterStage,
    Input,
    PipelineSpec,
    ProbeStage,
)
from hetdb.backend.gpu.compile import load_source
from hetdb.plan.expr import Call, ColumnRef, Literal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

SUM_COUNT = (("count_star", None), ("sum", col("v")))


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("case", ["random", "skewed", "empty_build", "empty_probe"])
def test_inner_probe_non_unique_with_nulls(case, share, tmp_path):
    rng = random.Random(hash(case) & 0xFFFF)
    n = 0 if case == "empty_probe" else 1500
    fk = [None if rng.random() < 0.1 else rng.randint(0, 60) for _ in range(n)]
    v = [None if rng.random() < 0.1 else rng.randint(-1000, 1000) for _ in range(n)]
    if case == "empty_build":
        bk: list = []
    elif case == "skewed":
        bk = [7] * 40 + [None] * 3 + [8]
    else:
        bk = [None if rng.random() < 0.1 else rng.randint(0, 80) for _ in range(120)]
    g = [rng.randint(0, 4) for _ in bk]  # build payload used as group key
    spec = PipelineSpec((Input("fk", T.INT64), Input("v", T.INT64)),
                        (ProbeStage("inner", (col("fk"),), (T.INT64,), (Input("g", T.INT64, False),)),),
                        AggregateSink((col("g"),), SUM_COUNT, share=share))
    if case == "skewed":
        fk = [7 if i % 3 == 0 else x for i, x in enumerate(fk)]
    got = by_key(run_kernel(spec, {"fk": fk, "v": v}, [(join_table([(x,) for x in bk]), [g])], tmp_path))
    if n:  # the same rows as three pages of one paged launch (page sizes not multiples of the tile)
        paged = run_kernel(spec, {"fk": fk, "v": v}, [(join_table([(x,) for x in bk]), [g])], tmp_path,
                           pages=(700, 13, n - 713))
        assert by_key(paged) == got
    ref: dict = defaultdict(lambda: [0, 0, 0])
    for a, val in zip(fk, v):
        for b, gg in zip(bk, g):
            if a is not None and a == b:
                r = ref[(gg,)]
                r[0] += 1
                if val is not None:
                    r[1] += val
                    r[2] += 1
    assert {k: [c, s, nn] for k, (c, s, nn) in got.items()} == dict(ref)
    assert (len(ref) > 0) == (case not in ("empty_build", "empty_probe"))


@pytest.mark.parametrize("kind", ["semi", "anti", "mark", "left"])
def test_filtering_and_outer_probes(kind, tmp_path):
    rng = random.Random(5)
    n = 1300
    fk = [None if rng.random() < 0.15 else rng.randint(0, 30) for _ in range(n)]
    gk = [None if rng.random() < 0.2 else rng.randint(0, 3) for _ in range(n)]
    v = [rng.randint(0, 100) for _ in range(n)]
    bk = [None if i % 9 == 0 else rng.randint(0, 20) for i in range(25)]
    w = [rng.randint(1, 9) for _ in bk]
    stages: tuple = (ProbeStage(kind, (col("fk"),), (T.INT64,),
                                (Input("w", T.INT64, False),) if kind == "left" else (),
                                mark="mk" if kind == "mark" else None),)
    keys: tuple = (col("gk"),)
    aggs = SUM_COUNT
    if kind == "mark":  # NOT IN: keep rows whose mark is FALSE (not TRUE, not NULL)
        stages += (FilterStage(Call(T.BOOL, "not", (ColumnRef(T.BOOL, "mk", True),))),)
    if kind == "left":
        aggs = (("count_star", None), ("sum", col("w")))
    spec = PipelineSpec((Input("fk", T.INT64), Input("gk", T.INT64), Input("v", T.INT64, False)), stages,
                        AggregateSink(keys, aggs))
    got = by_key(run_kernel(spec, {"fk": fk, "gk": gk, "v": v}, [(join_table([(x,) for x in bk]), [w])], tmp_path))
    ref: dict = defaultdict(lambda: [0, 0, 0])
    present = {b for b in bk if b is not None}
    has_null = any(b is None for b in bk)
    for a, g, val in zip(fk, gk, v):
        hit = a is not None and a in present
        if kind == "semi" and not hit or kind == "anti" and hit:
            continue
        if kind == "mark" and (hit or a is None or has_null):
            continue  # NOT (TRUE or NULL) does not pass
        if kind == "left":
            matches = [ww for b, ww in zip(bk, w) if hit and b == a] or [None]
            for ww in matches:
                r = ref[(g,)]
                r[0] += 1
                if ww is not None:
                    r[1] += ww
                    r[2] += 1
            continue
        r = ref[(g,)]
        r[0] += 1
        r[1] += val
        r[2] += 1
    assert {k: list(a) for k, a in got.items()} == dict(ref)
    assert len(ref) > 0 or kind == "mark"


def test_multi_key_probe_and_filter(tmp_path):
    rng = random.Random(9)
    n = 900
    a = [rng.randint(0, 5) for _ in range(n)]
    b = [None if rng.random() < 0.1 else rng.randint(0, 5) for _ in range(n)]
    build = [(rng.randint(0, 5), rng.randint(0, 5)) for _ in range(20)]
    spec = PipelineSpec((Input("a", T.INT64, False), Input("b", T.INT64)),
                        (FilterStage(Call(T.BOOL, "gt", (col("a"), Literal(T.INT64, 0)))),
                         ProbeStage("inner", (col("a"), col("b")), (T.INT64, T.INT64))),
                        AggregateSink((col("a"), col("b")), (("count_star", None),)))
    got = by_key(run_kernel(spec, {"a": a, "b": b}, [(join_table(build), [])], tmp_path))
    ref: dict = defaultdict(lambda: [0])
    for x, y in zip(a, b):
        if x > 0 and y is not None:
            for bb in build:
                if bb == (x, y):
                    ref[(x, y)][0] += 1
    assert got == dict(ref) and len(ref) > 3


def test_many_groups_and_overflow_detection(tmp_path):
    rng = random.Random(3)
    n = 3000
    k1 = [rng.randint(0, 2000) for _ in range(n)]
    k2 = [None if i % 11 == 0 else i % 3 for i in range(n)]
    v = [rng.randint(-50, 50) for _ in range(n)]
    spec = PipelineSpec((Input("k1", T.INT64, False), Input("k2", T.INT64), Input("v", T.INT64, False)), (),
                        AggregateSink((col("k1"), col("k2")), (("min", col("v")), ("max", col("v")))))
    got = by_key(run_kernel(spec, {"k1": k1, "k2": k2, "v": v}, [], tmp_path, slots=8192))
    ref: dict = {}
    for a, b, x in zip(k1, k2, v):
        lo, hi = ref.get((a, b), (x, x))
        ref[(a, b)] = (min(lo, x), max(hi, x))
    assert {k: (acc[0], acc[2]) for k, acc in got.items()} == ref and len(ref) > 2000
    # the same groups after the table grew into one of twice the slots (pipe_regroup)
    grown = by_key(run_kernel(spec, {"k1": k1, "k2": k2, "v": v}, [], tmp_path, slots=8192, grow_to=16384))
    assert grown == got
    with pytest.raises(AssertionError, match="FAIL"):  # a table too small reports overflow (the host reruns)
        run_kernel(spec, {"k1": k1, "k2": k2, "v": v}, [], tmp_path, slots=1024)


def test_paged_take_gathers_global_rows_from_pages(tmp_path):
    """pipeline.cuh pipe_paged_take: rows numbered over pages of different sizes (global row ->
    page by binary search over the first rows), values of 8, 4 and 1 bytes, a validity page
    without NULLs (null pointer) reading as valid, and pages kept compressed (for, dict, const:
    their encoded data sections, flagged per page) next to value arrays."""
    from hetdb.codec.encodings import encode_as

    sizes = (5, 1, 9, 4)
    starts = [sum(sizes[:p]) for p in range(len(sizes))]
    n = sum(sizes)
    rng = random.Random(2)
    rows = [rng.randrange(n) for _ in range(40)] + [0, n - 1, starts[1], starts[2]]
    v64 = [rng.randint(-(1 << 62), 1 << 62) for _ in range(n)]
    v32 = [rng.randint(-(1 << 30), 1 << 30) for _ in range(n)]
    v32[:sizes[0]] = [-77] * sizes[0]  # page 0 of v32: one value (a const page)
    valid = [rng.random() < 0.7 for _ in range(n)]
    no_nulls_page = 2  # its validity pointer is null
    codecs64 = {1: "for", 2: "dict"}  # page -> codec of v64's pages kept compressed
    codecs32 = {0: "const", 2: "for"}
    decl = [c_array("v64", "long long", v64), c_array("v32", "int", v32), c_array("val", "bool", valid),
            c_array("starts", "long long", starts), c_array("rows", "long long", rows),
            f"static long long o64[{len(rows)}];", f"static int o32[{len(rows)}];", f"static bool oval[{len(rows)}];"]
    for name, values, dtype, codecs in (("v64", v64, np.int64, codecs64), ("v32", v32, np.int32, codecs32)):
        for p, codec in codecs.items():
            section = encode_as(np.asarray(values[starts[p]:starts[p] + sizes[p]], dtype=dtype), codec)
            decl.append(f"alignas(8) static const unsigned char {name}_e{p}[] = "
                        f"{{{', '.join(str(int(b)) for b in section)}}};")
    main = ["int main() {", f"  long long p64[{len(sizes)}], p32[{len(sizes)}], pv[{len(sizes)}];",
            f"  long long e64[{len(sizes)}] = {{{', '.join('1' if p in codecs64 else '0' for p in range(len(sizes)))}}};",
            f"  long long e32[{len(sizes)}] = {{{', '.join('1' if p in codecs32 else '0' for p in range(len(sizes)))}}};"]
    for p, first in enumerate(starts):
        p64 = f"(long long)v64_e{p}" if p in codecs64 else f"(long long)(v64 + {first})"
        p32 = f"(long long)v32_e{p}" if p in codecs32 else f"(long long)(v32 + {first})"
        main.append(f"  p64[{p}] = {p64}; p32[{p}] = {p32}; "
                    f"pv[{p}] = {'0' if p == no_nulls_page else f'(long long)(val + {first})'};")
    main += ["  gridDim.x = 1; blockDim.x = 1; blockIdx.x = 0; threadIdx.x = 0;",
             f"  pipe_paged_take(p64, e64, starts, {len(sizes)}, 8, rows, {len(rows)}, (unsigned char*)o64);",
             f"  pipe_paged_take(p32, e32, starts, {len(sizes)}, 4, rows, {len(rows)}, (unsigned char*)o32);",
             f"  pipe_paged_take(pv, nullptr, starts, {len(sizes)}, 1, rows, {len(rows)}, (unsigned char*)oval);",
             f'  for (int i = 0; i < {len(rows)}; ++i) std::printf("%lld %d %d\\n", o64[i], o32[i], (int)oval[i]);',
             "  return 0;", "}"]
    src = tmp_path / "take.cpp"
    src.write_text(SHIM + load_source("pipeline.cuh") + "\n" + "\n".join(decl) + "\n" + "\n".join(main))
    exe = tmp_path / "take"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-o", str(exe), str(src)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split()
    got = [tuple(int(x) for x in out[i:i + 3]) for i in range(0, len(out), 3)]
    page_of = [max(p for p, f in enumerate(starts) if f <= r) for r in rows]
    want = [(v64[r], v32[r], 1 if p == no_nulls_page else int(valid[r])) for r, p in zip(rows, page_of)]
    assert got == want and len(got) == len(rows)
    assert {page_of[i] for i in range(len(rows))} == set(range(len(sizes)))  # every page was read


def test_paged_like_on_plain_string_pages(tmp_path):
    """A paged kernel reads a plain-string input's offsets and bytes from the page table (LIKE in the
    kernel, NULLs, empty strings, multi-byte code points), as the per-batch kernel over the same rows."""
    rng = random.Random(12)
    words = ["", "ab", "xaby", "é", "aéb", "straße", "abab", "zz"]
    n = 1400
    s = [None if rng.random() < 0.1 else rng.choice(words) + rng.choice(words) for _ in range(n)]
    g = [rng.randint(0, 5) for _ in range(n)]
    like = Call(T.BOOL, "like", (ColumnRef(T.STRING, "s", True), Literal(T.STRING, "%a_b%")))
    spec = PipelineSpec((Input("s", T.STRING), Input("g", T.INT64, False)), (FilterStage(like),),
                        AggregateSink((col("g"),), (("count_star", None),)))
    got = by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path))
    assert by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path, pages=(600, 1, 799))) == got
    pattern = re.compile(r".*a.b.*", re.S)  # ('_': one code point)
    want: dict = defaultdict(lambda: [0])
    for x, gg in zip(s, g):
        if x is not None and pattern.fullmatch(x):
            want[(gg,)][0] += 1
    assert got == dict(want) and len(want) > 3


@pytest.mark.parametrize("form", ["in_list", "eq"])
def test_substring_prefix_of_plain_strings(form, tmp_path):
    """``substring(s, 1, k) IN (...)`` / ``= '..'`` of a plain-string input runs in the kernel as byte
    prefix tests (TPC-H q22's country codes): literals of k characters, fewer (all of s) and more
    (never), multi-byte code points, NULLs, empty strings; equal to Python's code-point substring."""
    rng = random.Random(22 + len(form))
    words = ["", "a", "ab", "abc", "é", "éa", "aé", "x", "xy", "13-55", "31"]
    n = 1300
    s = [None if rng.random() < 0.1 else rng.choice(words) + rng.choice(words) for _ in range(n)]
    g = [rng.randint(0, 4) for _ in range(n)]
    items = ["ab", "éa", "x", "abc", "13", "31"] if form == "in_list" else ["éa"]
    sub = Call(T.STRING, "substring", (ColumnRef(T.STRING, "s", True), Literal(T.INT64, 1), Literal(T.INT64, 2)))
    lits = tuple(Literal(T.STRING, v) for v in items)
    pred = Call(T.BOOL, "in_list", (sub, *lits)) if form == "in_list" else Call(T.BOOL, "eq", (lits[0], sub))
    spec = PipelineSpec((Input("s", T.STRING), Input("g", T.INT64, False)), (FilterStage(pred),),
                        AggregateSink((col("g"),), (("count_star", None),)))
    got = by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path))
    assert by_key(run_kernel(spec, {"s": s, "g": g}, [], tmp_path, pages=(500, 2, 798))) == got
    want: dict = defaultdict(lambda: [0])
    for x, gg in zip(s, g):
        if x is not None and x[:2] in items:
            want[(gg,)][0] += 1
    assert got == dict(want) and len(want) > 3


def test_string_join_key_probes_by_the_builds_ids(tmp_path):
    """A string join key: the probe's dictionary codes look up the build's string ids (the lookup the
    executor fills from the build's key encoder, -1 for a string the build lacks); NULL probe keys and
    strings the build lacks match nothing; non-unique build keys expand (paged as well)."""
    rng = random.Random(21)
    probe_dict = ["a", "b", "c", "d", "é"]
    build_strings = ["c", "a", "x", "c", None, "é"]
    ids: dict[str, int] = {}
    for v in build_strings:
        if v is not None:
            ids.setdefault(v, len(ids))
    lut = [ids.get(v, -1) for v in probe_dict]
    n = 900
    codes = [None if rng.random() < 0.1 else rng.randrange(len(probe_dict)) for _ in range(n)]
    g = [rng.randint(0, 3) for _ in range(n)]
    w = [rng.randint(1, 9) for _ in build_strings]
    spec = PipelineSpec((Input("s", T.STRING, True, True), Input("g", T.INT64, False)),
                        (ProbeStage("inner", (ColumnRef(T.STRING, "s", True),), (T.STRING,),
                                    (Input("w", T.INT64, False),)),),
                        AggregateSink((col("g"),), (("count_star", None), ("sum", col("w")))))
    table = join_table([(None if v is None else ids[v],) for v in build_strings])
    got = by_key(run_kernel(spec, {"s": codes, "g": g}, [(table, [w])], tmp_path, luts=[lut]))
    assert by_key(run_kernel(spec, {"s": codes, "g": g}, [(table, [w])], tmp_path, luts=[lut],
                             pages=(500, 400))) == got
    want: dict = defaultdict(lambda: [0, 0, 0])
    for c, gg in zip(codes, g):
        for b, ww in zip(build_strings, w):
            if c is not None and b is not None and probe_dict[c] == b:
                r = want[(gg,)]
                r[0] += 1
                r[1] += ww
                r[2] += 1
    assert got == dict(want) and len(want) == 4


@pytest.mark.parametrize("n", [0, 3, 2100])
def test_aggregate_without_group_by_folds_in_registers(n, tmp_path):
    """No GROUP BY: each thread folds its rows' states in registers and the group is updated after
    the tile loop (pipeline_gen_assembly._keyless_flush; here one thread at a time, each updating the group);
    sums, counts, min and max (integers and doubles) over a filter and a non-unique probe, as one
    batch and as pages; no rows at all leave no group."""
    rng = random.Random(n)
    fk = [None if rng.random() < 0.1 else rng.randint(0, 30) for _ in range(n)]
    v = [None if rng.random() < 0.1 else rng.randint(-10**6, 10**6) for _ in range(n)]
    x = [rng.uniform(-50, 50) for _ in range(n)]
    bk = [rng.randint(0, 40) for _ in range(50)]
    spec = PipelineSpec((Input("fk", T.INT64), Input("v", T.INT64), Input("x", T.FLOAT64, False)),
                        (FilterStage(Call(T.BOOL, "gt", (col("x", T.FLOAT64), Literal(T.FLOAT64, -20.0)))),
                         ProbeStage("inner", (col("fk"),), (T.INT64,), ())),
                        AggregateSink((), (("count_star", None), ("sum", col("v")), ("min", col("v")),
                                           ("max", col("x", T.FLOAT64)))))
    build = [(join_table([(b,) for b in bk]), [])]
    got = run_kernel(spec, {"fk": fk, "v": v, "x": x}, build, tmp_path)
    per_row = dataclasses.replace(spec, sink=dataclasses.replace(spec.sink, fold=False))  # (group_fold off)
    assert "kl0" not in generate_pipeline(per_row).body and "kl0" in generate_pipeline(spec).body
    assert run_kernel(per_row, {"fk": fk, "v": v, "x": x}, build, tmp_path) == got
    if n > 1000:
        assert run_kernel(spec, {"fk": fk, "v": v, "x": x}, build, tmp_path, pages=(600, 7, n - 607)) == got
    rows = [(a, val, xx) for a, val, xx in zip(fk, v, x) for b in bk if a is not None and a == b and xx > -20.0]
    if not rows:
        assert got == []
        return
    assert len(got) == 1 and got[0][0] == ()
    count, vsum, vcnt, vmin, vmin_cnt, xmax, xmax_cnt = got[0][1]
    vals = [val for _, val, _ in rows if val is not None]
    assert (count, vsum, vcnt, vmin, vmin_cnt) == (len(rows), sum(vals), len(vals), min(vals), len(vals))
    best = max(xx for _, _, xx in rows)
    assert xmax_cnt == len(rows)
    assert xmax == (lambda b: b if b >= 0 else b ^ 0x7FFFFFFFFFFFFFFF)(struct.unpack("<q", struct.pack("<d", best))[0])
