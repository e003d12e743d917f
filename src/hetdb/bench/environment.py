"""What a benchmark ran on: software versions, CPU, memory, GPUs, and dropping the OS page cache."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

_PACKAGES = ("hetdb", "numpy", "numba", "pyarrow", "sqlglot", "duckdb", "cupy-cuda13x", "cupy-cuda12x",
             "cupy", "kvikio-cu13", "matplotlib")


def versions() -> dict[str, str]:
    """Versions of Python and of the installed packages that matter to the numbers."""
    out = {"python": sys.version.split()[0]}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    import hetdb

    out["hetdb"] = hetdb.__version__
    return out


def machine() -> dict[str, Any]:
    """Host name, OS, CPU model and count, host memory, and GPUs (names and memory) when visible."""
    info: dict[str, Any] = {"hostname": platform.node(), "os": platform.platform(),
                            "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
                            "host_memory_bytes": _host_memory()}
    info["gpus"] = gpus()
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def gpus() -> list[dict[str, Any]]:
    """Visible GPUs via CuPy (no GPU work beyond reading properties); [] without CuPy or a GPU."""
    try:
        import cupy
    except ImportError:
        return []
    try:
        out = []
        for i in range(cupy.cuda.runtime.getDeviceCount()):
            props = cupy.cuda.runtime.getDeviceProperties(i)
            name = props["name"]
            out.append({"index": i, "name": name.decode() if isinstance(name, bytes) else str(name),
                        "memory_bytes": int(props["totalGlobalMem"]),
                        "compute_capability": f"{props['major']}.{props['minor']}"})
        return out
    except Exception as e:  # noqa: BLE001 - CUDA driver errors have many types; record, don't fail
        return [{"error": f"{type(e).__name__}: {e}"}]


def drop_os_cache(paths: list[str]) -> dict[str, Any]:
    """Empty the OS page cache so the next reads come from the disk.

    Tries ``sync; echo 3 > /proc/sys/vm/drop_caches`` (root). When that is not permitted, evicts the
    files under ``paths`` with posix_fadvise(DONTNEED), which works for clean pages without root; the
    engine's O_DIRECT reads bypass the cache either way. Returns what was done.
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return {"method": "drop_caches", "permitted": True}
    except OSError as e:
        reason = f"{type(e).__name__}: {e.strerror or e}"
    files = 0
    for root in paths:
        for dirpath, _, names in os.walk(root):
            for name in names:
                files += _fadvise_dontneed(os.path.join(dirpath, name))
    return {"method": "posix_fadvise(DONTNEED) per file, engine reads O_DIRECT", "permitted": False,
            "reason": reason, "files_evicted": files}


def _fadvise_dontneed(path: str) -> int:
    if not hasattr(os, "posix_fadvise"):
        return 0
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return 1
    except OSError:
        return 0
    finally:
        os.close(fd)
