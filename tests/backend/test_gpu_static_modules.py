"""compile.static_modules: the list of .cu modules a fresh kernel cache is warmed with (the GPU fuzz
campaign's start, fuzz_main) names every ``get_module`` call of the package with the same name
expressions, so that the warmed cubins are the ones queries load; on a GPU, warming compiles a module
once and then finds it on disk."""

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
