"""Compiling hetdb's CUDA. compile.static_modules, the list of .cu modules a fresh kernel cache is
warmed with (the GPU fuzz campaign's start, fuzz_main), names every ``get_module`` call of the
package with the same name expressions, so that the warmed cubins are the ones queries load; on a GPU,
warming compiles a module once and then finds it on disk. HETDB_NVRTC_PCH=1 compiles generated kernels
with NVRTC's automatic precompiled header: the program text it makes, and on a GPU answers equal to the
CPU's with no compile refused."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hetdb
from hetdb.backend.gpu import compile as C
from hetdb.backend.gpu import gpu_available

SRC = Path(hetdb.__file__).parent


def _get_module_files() -> set[str]:
    """The first argument of every ``get_module("x.cu", ...)`` call in the package (but compile.py's
    own: warm_static_module's)."""
    found = set()
    for path in SRC.rglob("*.py"):
        if path == Path(C.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "get_module":
                first = node.args[0] if node.args else None
                assert isinstance(first, ast.Constant), f"{path}: get_module with a computed file name"
                found.add(first.value)
    return found


def test_static_modules_name_every_get_module_call() -> None:
    listed = [f for f, _ in C.static_modules()]
    assert len(listed) == len(set(listed))
    assert set(listed) == _get_module_files()
    for filename, names in C.static_modules():
        assert (C.KERNEL_DIR / filename).is_file()
        assert all(isinstance(n, str) and "<" in n for n in names)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_warming_a_fresh_cache_compiles_each_module_once(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HETDB_KERNEL_CACHE", str(tmp_path))
    C.get_module.cache_clear()
    index = [f for f, _ in C.static_modules()].index("window.cu")
    try:
        first = C.warm_static_module(index)
        C.get_module.cache_clear()
        again = C.warm_static_module(index)
    finally:
        C.get_module.cache_clear()
    assert first[0] == again[0] == "window.cu"
    assert (first[2], again[2]) == ("nvrtc", "disk")
    assert list(tmp_path.glob("window-*.cubin"))


def test_pch_program_includes_the_header_only_when_asked(monkeypatch) -> None:
    source = C.kernel_source("fused_pipeline.cuh", "k_pch_probe", 'extern "C" __global__ void k() {}')
    monkeypatch.delenv("HETDB_NVRTC_PCH", raising=False)
    assert C.pch_program(source) is None
    monkeypatch.setenv("HETDB_NVRTC_PCH", "1")
    text, options = C.pch_program(source)
    assert text == '#include "fused_pipeline.cuh"\nextern "C" __global__ void k() {}'
    assert "--pch" in options and any(o.startswith("--pch-dir=") for o in options)
    assert C.pch_program("// not a generated kernel\n" + source) is None


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_generated_kernels_compile_with_the_precompiled_header(tmp_path, monkeypatch) -> None:
    """HETDB_NVRTC_PCH=1: NVRTC accepts the automatic-PCH compile of generated kernels (none falls
    back to the inlined text) and the answers are the CPU's."""
    import numpy as np
    import pyarrow as pa

    import hetdb
    from hetdb import types as T
    from hetdb.backend.gpu.codegen import runtime as R
    from hetdb.storage import ColumnSpec, Database

    monkeypatch.setenv("HETDB_KERNEL_CACHE", str(tmp_path / "kernels"))
    monkeypatch.setenv("HETDB_NVRTC_PCH", "1")
    R.compile_source.cache_clear()
    rng = np.random.default_rng(3)
    t = pa.table({"a": rng.integers(0, 1000, 5000), "b": rng.random(5000), "g": rng.integers(0, 7, 5000)})
    db = Database.open(str(tmp_path / "db"), create=True)
    with db.create_table("t", [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in t.schema]) as w:
        w.append_arrow(t)
    before = R.PCH_COMPILES[0]
    queries = ["SELECT g, count(*), sum(a) FROM t WHERE b > 0.25 GROUP BY g ORDER BY g",
               "SELECT count(*), min(b) FROM t WHERE a BETWEEN 100 AND 731",
               "SELECT g, max(a * 3 + 1) FROM t WHERE b < 0.9 GROUP BY g ORDER BY g"]
    try:
        with hetdb.connect(str(tmp_path / "db"), device="gpu") as gpu, \
                hetdb.connect(str(tmp_path / "db"), device="cpu") as cpu:
            for sql in queries:
                assert gpu.sql(sql).fetchall() == cpu.sql(sql).fetchall(), sql
    finally:
        R.compile_source.cache_clear()
    assert R._PCH_REFUSED == [], R._PCH_REFUSED
    assert R.PCH_COMPILES[0] > before  # generated kernels were compiled with the PCH
