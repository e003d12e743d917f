"""Whether GPUDirect Storage (disk -> GPU DMA) is usable here, through kvikio (imported lazily)."""

from __future__ import annotations

from typing import Any


def gds_status(kvikio: Any = None) -> str:
    """"not installed", "installed, compat mode" (kvikio reads through host memory: no GDS driver or
    file system support) or "GDS" (kvikio's cuFile path). ``kvikio`` is injectable for tests."""
    if kvikio is None:
        try:
            import kvikio
        except Exception:  # noqa: BLE001 - ImportError, or a broken CUDA install failing at import
            return "not installed"
    defaults = kvikio.defaults
    try:
        if hasattr(defaults, "is_compat_mode_preferred"):
            compat = bool(defaults.is_compat_mode_preferred())
        else:  # kvikio before 25.x: compat_mode() is a bool
            compat = bool(defaults.compat_mode())
    except Exception as e:  # noqa: BLE001 - cuFile probing can fail on machines without the driver
        return f"installed, compat mode ({type(e).__name__}: {e})"
    return "installed, compat mode" if compat else "GDS"
