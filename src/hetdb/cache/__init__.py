"""Page caches: the ``PageCache`` interface and the GPU-memory tier (``DevicePageCache``)."""

from __future__ import annotations

from hetdb.cache.base import CacheStats, PageCache, PageKey
from hetdb.cache.device_cache import DevicePageCache

__all__ = ["CacheStats", "PageCache", "PageKey", "DevicePageCache"]
