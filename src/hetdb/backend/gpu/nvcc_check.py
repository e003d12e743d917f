"""Compile-check generated CUDA source with nvcc where there is no GPU (tests and `make cuda-check`).

A check needs the front end (parsing, templates, types) and the back ends to accept the code, not
optimised machine code: NVVM and ptxas run at -O0, which takes a quarter of the time of a default
build for the suites' ~100 generated kernels (measured: 25 s against 100 s of CPU on the 2-core
machine) and finds the same errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

CHECK_FLAGS = ("-std=c++17", "-arch=sm_90", "-Xcicc", "-O0", "-Xptxas", "-O0")


def nvcc_check(source: str, workdir: Path, name: str = "check", timeout: float = 900) -> subprocess.CompletedProcess:
    """Write ``source`` to ``workdir/name.cu`` and compile it to an object file; the caller asserts on
    ``returncode`` (and shows ``stderr``)."""
    path = Path(workdir) / f"{name}.cu"
    path.write_text(source)
    return subprocess.run(["nvcc", *CHECK_FLAGS, "-x", "cu", "-c", str(path), "-o", str(path.with_suffix(".o"))],
                          capture_output=True, text=True, timeout=timeout)
