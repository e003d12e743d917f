# hetdb: two commands a new user needs — `make demo` and `make test`. Everything else is set up here.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_DB ?= demo-db
DEMO_SF ?= 1
NVCC   ?= nvcc
CU_SOURCES := $(shell find src/hetdb -name '*.cu' 2>/dev/null)

.PHONY: venv demo test test-all test-fast lint cuda-check gpu-check fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The data is generated once per scale factor (the stamp is written only after a complete generation);
# a second `make demo` runs the queries only.
DEMO_DATA := $(DEMO_DB)/.ssb-sf$(DEMO_SF)

$(DEMO_DATA): | $(STAMP)
	rm -f $(DEMO_DB)/.ssb-sf*
	$(VENV)/bin/hetdb generate ssb --sf $(DEMO_SF) $(DEMO_DB)
	touch $@

# The sources' bytecode is written first (0.03 s when up to date): under PYTHONDONTWRITEBYTECODE=1 every
# run compiled ~150 modules from source again, ~1 s of a second demo's 2 s on 2 cores (measured).
demo: $(DEMO_DATA)
	@$(PY) -m compileall -q src/hetdb >/dev/null
	$(VENV)/bin/hetdb demo $(DEMO_DB)

# Compile-check every CUDA source for Hopper when nvcc is present (CI has it, no GPU needed).
cuda-check:
	@if command -v $(NVCC) >/dev/null 2>&1; then \
	  for f in $(CU_SOURCES); do \
	    echo "nvcc -arch=sm_90 $$f"; \
	    $(NVCC) -std=c++17 -arch=sm_90 -Xcicc -O0 -Xptxas -O0 -Isrc/hetdb/backend/gpu/kernels -c $$f -o /dev/null || exit 1; \
	  done; \
	else echo "nvcc not found: skipping CUDA compile check"; fi

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests

# CI's target: everything not marked slow (kept well under 30 minutes on 2 cores).
test: $(STAMP) cuda-check lint
	$(PY) -m pytest -q --durations=30 -m "not slow" tests

# Everything, the slow tests too (the configuration matrix's longest cases, 50,000-term chains, ...).
test-all: $(STAMP) cuda-check lint
	$(PY) -m pytest -q --durations=30 tests

test-fast: $(STAMP)
	$(PY) -m pytest -q -x -m "not slow" tests

# The fuzz campaign (random queries vs DuckDB + TLP/NoREC, tests/differential/fuzz_main.py): every case
# under every executor configuration, FUZZ_QUERIES cases each (default 100000), on the CPU and, where CuPy
# sees a GPU, on the GPU (FUZZ_DEVICE=cpu|gpu|all), in FUZZ_JOBS processes (default: one per core).
# Resumable: the campaign lives in FUZZ_DIR (default build/fuzz; run again to go on), summary.txt counts
# the cases per configuration, failures.txt holds every mismatch with its replay command.
# FUZZ_SECONDS stops cleanly after that long; FUZZ_SEED, FUZZ_CASES=A:B, FUZZ_SHARD=I/N split a campaign.
FUZZ_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
FUZZ_DEVICE ?= all
fuzz: $(STAMP)
	FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_DEVICE=$(FUZZ_DEVICE) $(PY) tests/differential/fuzz_main.py

gpu-check:
	bash scripts/gpu-check.sh

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache
