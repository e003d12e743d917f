"""Page caches: the ``PageCache`` interface, the GPU-memory tier (``DevicePageCache``) and the pinned
host-memory tier (``HostPageCache``, process-wide through ``shared_host_cache``)."""

from __future__ import annotations

from hetdb.cache.base import CacheStats, PageCache, PageKey
from hetdb.cache.device_cache import DevicePageCache
from hetdb.cache.host_cache import HostPage, HostPageCache, shared_host_cache

__all__ = ["CacheStats", "PageCache", "PageKey", "DevicePageCache", "HostPage", "HostPageCache",
           "shared_host_cache"]
