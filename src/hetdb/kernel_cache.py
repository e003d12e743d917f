"""Where compiled Numba kernels are cached on disk, across processes.

Numba's own cache (``cache=True``) keys a kernel by its source file's time stamp only: a change to a
module it inlines from, a constant it freezes in (``HASH_SEED``), or an upgrade of NumPy/Numba would
reuse a stale binary. hetdb therefore points Numba at ``~/.cache/hetdb/numba/<key>`` where the key
hashes the sources of every hetdb module holding kernels, the hetdb modules they import from, and
the versions of Python, NumPy, Numba and llvmlite (Numba adds the CPU model and features itself).
A warm directory makes the first query of a fresh process load kernels instead of compiling them.
Must run before Numba is imported by anything of hetdb (``hetdb/__init__`` calls ``configure``); a
``NUMBA_CACHE_DIR`` the user set wins. Directories of keys unused for two weeks are pruned.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# Directories of other keys (other checkouts, versions, edits) kept: at most this many, and only those
# used in the last two weeks. A few MiB each.
_KEEP = 32
_KEEP_SECONDS = 14 * 24 * 3600
_IMPORT = re.compile(rb"^\s*from (hetdb(?:\.\w+)*) import", re.M)
_KERNEL_MARKERS = (b"@njit", b"numba.njit", b"@numba.jit", b"@jit(")


def _module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    if not parts:  # ``from hetdb import x``: x is a module (found by its own import line) or a name
        return None
    rel = Path(*parts)
    for cand in (_PACKAGE / rel.with_suffix(".py"), _PACKAGE / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def code_key() -> str:
    """Hash of everything that changes the machine code of hetdb's Numba kernels."""
    h = hashlib.sha256()
    for package in ("numba", "llvmlite", "numpy"):
        # the installed package's version file, found without importing it (importlib.metadata
        # scans every distribution on the path: a quarter second)
        spec = importlib.util.find_spec(package)
        where = spec.submodule_search_locations if spec is not None else None
        version = Path(list(where)[0]) / ("version.py" if package == "numpy" else "_version.py") \
            if where else None
        h.update(package.encode())
        h.update(version.read_bytes() if version is not None and version.is_file() else b"?")
    h.update(sys.version.encode())
    files: dict[Path, bytes] = {}
    for folder, subdirs, names in os.walk(_PACKAGE):
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = Path(folder, name)
                text = path.read_bytes()
                if any(m in text for m in _KERNEL_MARKERS):
                    files[path] = text
    for text in list(files.values()):
        for name in _IMPORT.findall(text):
            dep = _module_file(name.decode())
            if dep is not None and dep not in files:
                files[dep] = dep.read_bytes()
    for path in sorted(files):
        h.update(str(path.relative_to(_PACKAGE)).encode())
        h.update(hashlib.sha256(files[path]).digest())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hetdb" / "numba"


def _prune(root: Path, current: Path) -> None:
    others = [(p.stat().st_mtime, p) for p in root.iterdir() if p.is_dir() and p != current]
    others.sort(reverse=True)
    newest = current.stat().st_mtime
    for i, (mtime, old) in enumerate(others):
        if i >= _KEEP or newest - mtime > _KEEP_SECONDS:
            shutil.rmtree(old, ignore_errors=True)


def configure() -> str | None:
    """Point Numba's cache at hetdb's keyed directory; returns it (None: left as Numba's default,
    because the user chose a directory or the cache root is not writable)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    root = cache_root()
    path = root / code_key()
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.utime(path)  # most recently used: the last to be pruned
        _prune(root, path)
    except OSError:
        return None
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None:  # Numba imported before hetdb: its config has read the env already
        numba_config.CACHE_DIR = str(path)
    return str(path)
