"""The on-disk kernel cache directory: keyed by the code of the kernels, chosen before Numba loads."""

from __future__ import annotations

import os
import subprocess
import sys

import hetdb.kernel_cache as K


def _package(tmp_path, kernel: str, helper: str):
    pkg = tmp_path / "hetdb"
    (pkg / "backend").mkdir(parents=True)
    (pkg / "backend" / "k.py").write_text("from hetdb.consts import SEED\n@njit(cache=True)\ndef f(x):\n"
                                          f"    return x + {kernel}\n")
    (pkg / "consts.py").write_text(f"SEED = {helper}\n")
    (pkg / "other.py").write_text("def g():\n    return 1\n")
    return pkg


def test_key_changes_with_kernels_and_what_they_import(tmp_path, monkeypatch):
    pkg = _package(tmp_path, "1", "7")
    monkeypatch.setattr(K, "_PACKAGE", pkg)
    base = K.code_key()
    assert base == K.code_key()
    (pkg / "other.py").write_text("def g():\n    return 2\n")  # no kernel, not imported by one
    assert K.code_key() == base
    (pkg / "consts.py").write_text("SEED = 8\n")  # a constant a kernel freezes in
    changed = K.code_key()
    assert changed != base
    (pkg / "backend" / "k.py").write_text("@njit(cache=True)\ndef f(x):\n    return x + 2\n")
    assert K.code_key() not in (base, changed)


def test_numba_caches_in_the_keyed_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = "import hetdb, numba.core.config as c; print(c.CACHE_DIR)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "hetdb" / "numba" / K.code_key())
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")  # the user's choice wins
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "mine")
