"""Table versions on disk: reading CURRENT, numbering new versions, and removing what is no longer needed.

A version directory ``v<N>`` is immutable once renamed into place; ``v<N>.tmp-<pid>`` is a writer's
work in progress. Only the version CURRENT names is visible to readers.
"""

from __future__ import annotations

import os
import re
import shutil

from hetdb.errors import CorruptDataError
from hetdb.storage.format import CURRENT, decode_current

_VERSION_RE = re.compile(r"^v(\d+)$")
_TMP_RE = re.compile(r"^v(\d+)\.tmp-(\d+)$")
_CURRENT_TMP_RE = re.compile(r"^CURRENT\.tmp-(\d+)$")

# tmp directories being written by live writers of this process (never cleaned up under them)
ACTIVE_TMP_DIRS: set[str] = set()

# bumped by every commit and drop this process makes (catalog_epoch): a memo of the catalog's state
# that may lag other processes' changes for a moment (exec/device.keep_compressed) never lags its own
_EPOCH = [0]


def catalog_epoch() -> int:
    """A number that changes whenever this process commits or drops a table."""
    return _EPOCH[0]


def note_catalog_change() -> None:
    _EPOCH[0] += 1


def read_current(table_dir: str, table: str) -> int | None:
    """The committed version of the table in ``table_dir``; None when nothing was ever committed."""
    path = os.path.join(table_dir, CURRENT)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    return decode_current(data, f"table '{table}' ({path})")


def committed_version(table_dir: str, table: str) -> int:
    """Like read_current but the version directory must exist."""
    version = read_current(table_dir, table)
    if version is None:
        raise CorruptDataError(f"table '{table}': {os.path.join(table_dir, CURRENT)} is missing")
    if not os.path.isdir(os.path.join(table_dir, f"v{version}")):
        raise CorruptDataError(f"table '{table}': CURRENT names version {version} but "
                               f"{os.path.join(table_dir, f'v{version}')} does not exist")
    return version


def dropped_marker(table_dir: str) -> str:
    """The file that keeps a dropped table's highest version number (next to the tables' directories,
    named after the table's): a table created again under that name numbers its versions above it, so
    a version directory's path never names two different tables' pages (the page caches key pages by
    it, and a connection, or another process, may still hold the dropped table's pages)."""
    parent, name = os.path.split(os.path.normpath(table_dir))
    return os.path.join(parent, f".top-version-{name}")


def record_dropped(table_dir: str) -> None:
    """Before ``table_dir`` is removed: write its highest version number into dropped_marker."""
    top = max(next_version(table_dir, read_current(table_dir, os.path.basename(table_dir))) - 1, 0)
    marker = dropped_marker(table_dir)
    tmp = f"{marker}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(str(top))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, marker)


def next_version(table_dir: str, current: int | None) -> int:
    """A version number above every committed, orphaned or in-progress version directory, and above
    every version of a table of this name that was dropped."""
    top = current or 0
    try:
        with open(dropped_marker(table_dir)) as f:
            top = max(top, int(f.read().strip() or 0))
    except (FileNotFoundError, ValueError):
        pass
    for entry in os.listdir(table_dir):
        m = _VERSION_RE.match(entry) or _TMP_RE.match(entry)
        if m:
            top = max(top, int(m.group(1)))
    return top + 1


def remove_stale(table_dir: str, keep: set[int] | None) -> None:
    """Remove tmp directories and CURRENT.tmp files of dead writers and, when ``keep`` is given,
    every version directory not in it (old versions and orphans of writers killed after the rename).
    Only the holder of the table's writer lock calls this, so no other writer is alive: every tmp
    entry but this process's active ones is a dead writer's."""
    try:
        entries = os.listdir(table_dir)
    except FileNotFoundError:
        return
    for entry in entries:
        path = os.path.join(table_dir, entry)
        m = _VERSION_RE.match(entry)
        if m:
            if keep is not None and int(m.group(1)) not in keep:
                shutil.rmtree(path, ignore_errors=True)
            continue
        t = _TMP_RE.match(entry) or _CURRENT_TMP_RE.match(entry)
        if t and path not in ACTIVE_TMP_DIRS:
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
