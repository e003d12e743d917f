"""Run-time compilation of hetdb's CUDA C++ sources with NVRTC, cached on disk.

A module is one ``kernels/*.cu`` file with its ``#include "x.cuh"`` headers inlined, compiled for the
current device's architecture. The disk cache key is a hash of everything that changes the binary:
the full source (headers included), the NVRTC options, the name expressions, the compute capability,
the NVRTC version and the hetdb version. Compiled cubins and their lowered (mangled) kernel names live
in ``$HETDB_KERNEL_CACHE`` (default ``~/.cache/hetdb/kernels``). Nothing here touches CuPy or the GPU
until a module is first asked for.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import hetdb
from hetdb.compiling import compiling
from hetdb.errors import HetdbError

KERNEL_DIR = Path(__file__).parent / "kernels"
# modules this process compiled with NVRTC ("nvrtc") and loaded from the disk cache ("disk"), for
# probes and tests (compile_counts)
_COUNTS = {"nvrtc": 0, "disk": 0}
DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17",)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


def load_source(filename: str) -> str:
    """The source of ``kernels/<filename>`` with every local ``#include "..."`` inlined once."""
    seen: set[str] = set()

    def expand(name: str) -> str:
        if name in seen:  # headers use #pragma once; inlining each once keeps line counts small
            return ""
        seen.add(name)
        path = KERNEL_DIR / name
        if not path.is_file():
            raise HetdbError(f"CUDA source {path} is missing: the hetdb installation is incomplete")
        text = path.read_text()
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(filename)



_KERNEL_SOURCES: dict[tuple[str, str], str] = {}  # (header, kernel name: a hash of its text) -> full source


def kernel_source(header: str, name: str, body: str) -> str:
    """``kernels/<header>`` (includes inlined) and a generated kernel's ``body``: what NVRTC compiles.
    Made once per kernel (the specs of queries differing only in literal values share it), so the
    module cache's look-up hashes one string object (whose hash Python keeps)."""
    key = (header, name)
    text = _KERNEL_SOURCES.get(key)
    if text is None:
        if len(_KERNEL_SOURCES) >= 2048:
            _KERNEL_SOURCES.pop(next(iter(_KERNEL_SOURCES)))
        inlined = _HEADERS.get(header)
        if inlined is None:
            inlined = _HEADERS[header] = load_source(header)
        text = _KERNEL_SOURCES[key] = inlined + "\n" + body
    return text


_HEADERS: dict[str, str] = {}  # header -> its text with includes inlined (kernel_source's prefix)


def pch_program(source: str) -> tuple[str, tuple[str, ...]] | None:
    """A generated kernel's source as NVRTC's automatic precompiled header (NVRTC 12.8+) wants it,
    when ``HETDB_NVRTC_PCH`` is set (an opt-in under measurement: the fuzz campaign's compiles): the
    header as ``#include "<header>"`` from kernels/ and the body, with the options that make NVRTC
    create the header's PCH once and load it in every later compile of the process, instead of
    parsing ~70 KB of header per kernel (nvcc here: 0.24 s of a generated kernel's 0.4-0.8 s). The
    PCH folder is the process's own (removed at exit): processes compiling at once never read a PCH
    another one is still writing. The code compiled is the same; the disk cache keeps its key (the
    inlined text). None for other sources or when unset."""
    if os.environ.get("HETDB_NVRTC_PCH", "") in ("", "0"):
        return None
    for header, inlined in _HEADERS.items():
        if source.startswith(inlined) and source[len(inlined):len(inlined) + 1] == "\n":
            return (f'#include "{header}"\n' + source[len(inlined) + 1:],
                    (f"--include-path={KERNEL_DIR}", "--pch", f"--pch-dir={_pch_dir()}"))
    return None


@functools.cache
def _pch_dir() -> str:
    import atexit
    import shutil

    path = tempfile.mkdtemp(prefix="hetdb-pch-")
    atexit.register(shutil.rmtree, path, True)
    return path


def compile_counts() -> dict[str, int]:
    """How many CUDA modules this process has compiled with NVRTC ("nvrtc") and loaded from the
    disk cache ("disk") so far (generated kernels and .cu files alike)."""
    return dict(_COUNTS)


def count(kind: str) -> None:
    _COUNTS[kind] += 1


def cache_dir() -> Path:
    return Path(os.environ.get("HETDB_KERNEL_CACHE", Path.home() / ".cache" / "hetdb" / "kernels"))


def cache_key(source: str, options: tuple[str, ...], name_expressions: tuple[str, ...],
              compute_capability: str, nvrtc_version: tuple[int, int]) -> str:
    """Hex digest over everything that changes the compiled binary."""
    h = hashlib.sha256()
    for part in (source, "\0".join(options), "\0".join(name_expressions), compute_capability,
                 f"{nvrtc_version[0]}.{nvrtc_version[1]}", hetdb.__version__):
        h.update(part.encode())
        h.update(b"\x1f")
    return h.hexdigest()


class CompiledModule:
    """A loaded module; ``function(name)`` accepts a plain extern "C" name or a name expression."""

    def __init__(self, module: Any, lowered: dict[str, str], cache_path: Path | None):
        self.module = module
        self.lowered = lowered
        self.cache_path = cache_path
        self._functions: dict[str, Any] = {}

    def function(self, name: str) -> Any:
        fn = self._functions.get(name)
        if fn is None:
            fn = self.module.get_function(self.lowered.get(name, name))
            self._functions[name] = fn
        return fn


def _nvrtc():
    from cupy_backends.cuda.libs import nvrtc

    return nvrtc


@functools.cache
def get_module(filename: str, name_expressions: tuple[str, ...] = (),
               options: tuple[str, ...] = DEFAULT_OPTIONS) -> CompiledModule:
    """Compile (or load from the disk cache) ``kernels/<filename>`` for the current device."""
    import cupy

    source = load_source(filename)
    cc = cupy.cuda.Device().compute_capability
    nvrtc = _nvrtc()
    key = cache_key(source, options, name_expressions, cc, tuple(nvrtc.getVersion()))
    directory = cache_dir()
    cubin_path = directory / f"{Path(filename).stem}-{key[:32]}.cubin"
    names_path = cubin_path.with_suffix(".json")
    if cubin_path.is_file() and names_path.is_file():
        lowered = json.loads(names_path.read_text())
        count("disk")
        return CompiledModule(cupy.RawModule(path=str(cubin_path)), lowered, cubin_path)
    try:
        cubin, lowered = _compile_cubin(nvrtc, source, filename, options, name_expressions, cc)
    except (AttributeError, RuntimeError):
        # This CuPy lacks the NVRTC entry points used above (or cannot emit a cubin): compile through
        # RawModule, which keeps its own cache (keyed by source, options, arch and versions).
        count("nvrtc")
        module = cupy.RawModule(code=source, options=options, name_expressions=name_expressions)
        return CompiledModule(module, {}, None)
    _write_atomically(cubin_path, cubin)
    _write_atomically(names_path, json.dumps(lowered).encode())
    return CompiledModule(cupy.RawModule(path=str(cubin_path)), lowered, cubin_path)


def static_modules() -> list[tuple[str, tuple[str, ...]]]:
    """Every ``kernels/*.cu`` module hetdb loads, as ``get_module``'s (filename, name expressions):
    what a fresh kernel cache compiles (``warm_static_module``). tests/backend/test_gpu_kernel_compile.py
    checks that the list names every ``get_module`` call of the package."""
    from hetdb.backend.gpu.aggregate import AGG_NAMES
    from hetdb.backend.gpu.decode import DECODE_NAMES
    from hetdb.backend.gpu.hashing import HASH_NAMES

    return [("hash.cu", HASH_NAMES), ("aggregate.cu", AGG_NAMES), ("decode.cu", DECODE_NAMES),
            ("hash_table.cu", ()), ("string_keys.cu", ()), ("window.cu", ()), ("batch_decode.cu", ()),
            ("strings.cu", ()), ("shuffle_encode.cu", ()), ("upload.cu", ())]


def warm_static_module(index: int) -> tuple[str, float, str]:
    """Compile ``static_modules()[index]`` into the disk cache unless it is there: (filename,
    seconds, "nvrtc" or "disk"). Several processes each warming one module fill a fresh cache in the
    time of the slowest module, where processes starting together would each compile all of them
    (the fuzz campaign's workers: fuzz_main)."""
    import time

    filename, names = static_modules()[index]
    before = _COUNTS["nvrtc"]
    t0 = time.perf_counter()
    get_module(filename, names)
    return filename, time.perf_counter() - t0, "nvrtc" if _COUNTS["nvrtc"] > before else "disk"


def _compile_cubin(nvrtc: Any, source: str, filename: str, options: tuple[str, ...],
                   name_expressions: tuple[str, ...], cc: str) -> tuple[bytes, dict[str, str]]:
    count("nvrtc")
    prog = nvrtc.createProgram(source, filename, [], [])
    try:
        add_name = getattr(nvrtc, "addNameExpression", None) or nvrtc.addAddNameExpression
        for name in name_expressions:
            add_name(prog, name)
        try:
            with compiling(f"CUDA {filename}"):
                nvrtc.compileProgram(prog, [*options, f"--gpu-architecture=sm_{cc}"])
        except nvrtc.NVRTCError as e:
            raise HetdbError(f"NVRTC failed to compile {filename} for sm_{cc}: {e}\n"
                             f"{nvrtc.getProgramLog(prog)}") from e
        lowered = {name: nvrtc.getLoweredName(prog, name) for name in name_expressions}
        return nvrtc.getCUBIN(prog), lowered
    finally:
        nvrtc.destroyProgram(prog)


def _write_atomically(path: Path, data: bytes) -> None:
    # Several processes (GPU ranks) may compile the same module at once: write-then-rename so a reader
    # never sees a partial file.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# ---- launching ------------------------------------------------------------------------------------
BLOCK = 256


def check_launches_enabled() -> bool:
    """Synchronise after every launch to surface asynchronous errors at their source (tests set it)."""
    return os.environ.get("HETDB_CHECK_LAUNCHES", "") not in ("", "0")


def grid_for(n: int, items_per_block: int = BLOCK, max_blocks: int = 65536) -> int:
    """Blocks for n items at items_per_block per block, capped (kernels loop grid-stride)."""
    return max(1, min(max_blocks, -(-n // items_per_block)))


def launch(fn: Any, grid: int, block: int, args: tuple, shared_mem: int = 0) -> None:
    """Launch ``fn`` on the current stream; with HETDB_CHECK_LAUNCHES set, wait and raise on error."""
    fn((grid,), (block,), args, shared_mem=shared_mem)
    if check_launches_enabled():
        synchronize()


def synchronize() -> None:
    """Wait for the current device; raises CuPy's CUDA error if a kernel failed."""
    import cupy

    cupy.cuda.get_current_stream().synchronize()
    cupy.cuda.runtime.deviceSynchronize()
