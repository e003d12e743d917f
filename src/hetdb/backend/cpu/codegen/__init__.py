"""The CPU pipeline compiler: a pipeline (scan -> filters / projections / hash probes -> hash
aggregation) becomes the Python source of one Numba ``nogil`` function that runs a whole morsel in
one loop (``pipeline_py``), from the same expression IR the operators evaluate (``expr_py``), with
its run-time helpers (group hash table, float order, dates, overflow checks) in ``runtime``."""
