"""The Backend protocol: the one kernel interface that operators call, implemented for the CPU
(backend/cpu: NumPy + Numba) and the GPU (backend/gpu: CuPy + CUDA C++ compiled with NVRTC).

Operators never import NumPy or CuPy: they use ``backend.xp`` for elementwise array arithmetic (the
two modules share an API) and the kernels below for everything else. Kernels take already-evaluated
arrays of the backend's device and a fixed argument tuple, and return arrays on the same device.

Conventions shared by every kernel:
  * Index arrays are int64. Masks are bool. Arrays are 1-D and contiguous.
  * Keys passed to hashing/join/group kernels are a list of equal-length arrays of dtypes int32, int64,
    float64 or bool (strings arrive as int32 dictionary codes or as codes from ``factorize_strings``;
    decimals and dates as their integer physical values). Kernels never see NULLs: the operator
    removes rows whose key is NULL (joins) or adds an explicit validity key column (group by).
  * float64 keys compare by value with -0.0 == 0.0 and all NaNs equal to each other (SQL GROUP BY).
  * Hash values are the same on every backend (needed for partitioning/shuffles that mix devices):
    see ``hash_keys``.
  * Results are identical on every backend, including row order where an order is promised.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

HASH_SEED = 0x9E3779B97F4A7C15


@runtime_checkable
class Backend(Protocol):
    name: str  # "cpu" or "gpu"
    xp: Any    # numpy or cupy

    # ---- movement -------------------------------------------------------------------------------
    def asarray(self, host_array: Any) -> Any:
        """Copy a host NumPy array onto this backend's device (no copy on the CPU)."""

    def to_host(self, array: Any) -> Any:
        """Copy an array of this backend to a host NumPy array (no copy on the CPU)."""

    # ---- selection ------------------------------------------------------------------------------
    def nonzero(self, mask: Any) -> Any:
        """Indices (int64, ascending) where ``mask`` is True."""

    def gather(self, values: Any, indices: Any) -> Any:
        """values[indices]; an index of -1 yields an unspecified (but harmless) value."""

    # ---- hashing and joins ----------------------------------------------------------------------
    def hash_keys(self, keys: list[Any]) -> Any:
        """uint64 hash per row of the composite key, identical on every backend:
        h = HASH_SEED; for each key column k: h = splitmix64(h ^ bits(k)) where bits() is the value
        widened to int64 (bool -> 0/1, int32 sign-extended; float64: its IEEE bits after mapping
        -0.0 to 0.0 and every NaN to the canonical quiet NaN 0x7FF8000000000000) reinterpreted as
        uint64; splitmix64(z): z += 0x9E3779B97F4A7C15; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31) (all mod 2**64)."""

    def join_build(self, keys: list[Any]) -> Any:
        """Build a hash table over the build side's key columns (rows already free of NULL keys).
        Returns an opaque table object used by ``join_probe``; it records ``num_rows``."""

    def join_probe(self, table: Any, keys: list[Any], kind: str) -> Any:
        """Probe with the probe side's key columns (same count and dtypes as the build keys).
        kind == "inner": (probe_idx, build_idx), every matching pair, grouped by probe row ascending;
                         within a probe row, build rows in ascending order.
        kind == "semi":  probe_idx of probe rows with at least one match (ascending).
        kind == "anti":  probe_idx of probe rows with no match (ascending).
        kind == "mark":  bool array, one per probe row: has a match.
        kind == "left":  (probe_idx, build_idx) like inner plus every unmatched probe row once with
                         build_idx == -1, grouped by probe row ascending.
        kind == "build_matched": bool array over build rows: matched by at least one probe row
                         (for right/full outer joins and build-side semi joins)."""

    # ---- grouping and aggregation ---------------------------------------------------------------
    def group_ids(self, keys: list[Any], num_rows: int | None = None) -> tuple[Any, int, Any]:
        """Dense group numbering: (group_id per row int64, number of groups, index of the first row
        of each group int64). Groups are numbered in order of first appearance. No keys -> one group
        of ``num_rows`` rows (when num_rows >= 1)."""

    def aggregate(self, op: str, values: Any | None, group_ids: Any, num_groups: int,
                  valid: Any | None = None) -> tuple[Any, Any]:
        """Per-group aggregate of ``values`` over rows where ``valid`` (None = all valid).
        op in "sum", "count", "count_star", "min", "max", "any" (first valid value).
        Returns (result array, result validity bool array: group had >= 1 valid row; all True for
        count/count_star). sum of int32/int64 -> int64 (wrapping is a bug: callers use int64),
        sum of float64 -> float64, count -> int64, min/max keep the input dtype; for float64 min/max,
        NaN is greater than every other value (DuckDB's ordering)."""

    def count_distinct(self, values: Any, group_ids: Any, num_groups: int,
                       valid: Any | None = None) -> Any:
        """Number of distinct valid values per group (int64)."""

    # ---- ordering -------------------------------------------------------------------------------
    def sort_indices(self, keys: list[Any], descending: list[bool]) -> Any:
        """Stable lexicographic sort permutation (int64). NULL placement is the operator's job: it
        passes an extra bool key in front of a nullable key. float64: NaN sorts after every number
        ascending (DuckDB)."""

    def topk_indices(self, keys: list[Any], descending: list[bool], k: int) -> Any:
        """The first k indices of ``sort_indices(keys, descending)`` (same tie order)."""

    # ---- strings (offsets int64 of length n+1, chars uint8 UTF-8) -------------------------------
    def like(self, offsets: Any, chars: Any, pattern: str, case_insensitive: bool = False) -> Any:
        """SQL LIKE: '%' any sequence, '_' one character (one UTF-8 code point); no escape char.
        Returns a bool mask (one per string)."""

    def compare_string_scalar(self, offsets: Any, chars: Any, literal: str, op: str) -> Any:
        """Byte-wise (UTF-8) comparison of each string with a literal; op in = <> < <= > >=."""

    def factorize_strings(self, offsets: Any, chars: Any) -> tuple[Any, Any, Any]:
        """(codes int32 per string, uniques offsets, uniques chars); uniques sorted byte-wise, so
        codes order like the strings."""

    def substring(self, offsets: Any, chars: Any, start: int, length: int | None) -> tuple[Any, Any]:
        """SQL SUBSTRING(s, start[, length]) with 1-based start counted in characters (code points);
        returns (offsets, chars)."""

    def gather_strings(self, offsets: Any, chars: Any, indices: Any) -> tuple[Any, Any]:
        """Strings at ``indices`` (no -1) as a new (offsets, chars)."""
