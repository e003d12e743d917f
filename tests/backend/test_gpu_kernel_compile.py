"""Compiling hetdb's CUDA. compile.static_modules, the list of .cu modules a fresh kernel cache is
warmed with (the GPU fuzz campaign's start, fuzz_main), names every ``get_module`` call of the
package with the same name expressions, so that the warmed cubins are the ones queries load; on a GPU,
warming compiles a module once and then finds it on disk. HETDB_NVRTC_PCH=1 compiles generated kernels
with NVRTC's automatic precompiled header: the program text it makes, and on a GPU no compile refused
and the kernels run."""

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
    """HETDB_NVRTC_PCH=1: NVRTC takes the automatic-PCH program of two generated kernels (the first
    creates the PCH, the second may load it; none falls back to the inlined text) and they run."""
    import uuid

    import cupy

    from hetdb.backend.gpu.codegen import runtime as R

    monkeypatch.setenv("HETDB_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setenv("HETDB_NVRTC_PCH", "1")
    before = R.PCH_COMPILES[0]
    for value in (7, 11):
        name = f"k_{uuid.uuid4().hex}"
        body = f'extern "C" __global__ void {name}(long long* out) {{ out[threadIdx.x] = {value} + threadIdx.x; }}'
        module = R.compile_source(C.kernel_source("fused_pipeline.cuh", name, body))
        out = cupy.zeros(4, dtype=cupy.int64)
        module.function(name)((1,), (4,), (out,))
        assert out.get().tolist() == [value, value + 1, value + 2, value + 3]
    assert R._PCH_REFUSED == [], R._PCH_REFUSED
    assert R.PCH_COMPILES[0] == before + 2
