"""Physical operators: immutable descriptions (sources, streaming operators, sinks) whose run-time
state lives in separate global (per pipeline) and local (per worker) state objects."""
