"""The executor configurations every fuzz campaign runs under (after test_configurations.py's matrix).

Default CPU executor (2 worker threads), batches of 7 rows, zone maps off, every optimizer pass off,
a host memory limit small enough to force partitioned/spilling hash joins and aggregates, and four
worker threads on one-row-group batches.
"""

from __future__ import annotations

from hetdb.plan.optimizer import PASSES

SPILL_LIMIT = "64KB"

FUZZ_CONFIGURATIONS: list[tuple[str, dict]] = [
    ("default", {}),
    ("batch_rows=7", {"batch_rows": 7}),
    ("zone_maps=False", {"zone_maps": False}),
    ("all passes off", {"disabled_passes": {name for name, _ in PASSES}}),
    (f"host_memory_limit={SPILL_LIMIT}", {"host_memory_limit": SPILL_LIMIT}),
    ("threads=4 batch_rows=16", {"threads": 4, "batch_rows": 16}),
]
