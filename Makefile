# One-command setup: every target creates .venv from pyproject.toml on demand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch is installed first, pinned: this CPU build is on the machines' disks, and the unpinned
# torch that the neural extra asks for would otherwise download a multi-GB CUDA build.
# The jax extra needs no pin: pip's default jaxlib is the CPU build (about 85 MB, no CUDA).
TORCH_VERSION ?= 2.13.0

.PHONY: demo test lint fast bench clean

# pyproject's dependencies include TBB, numba's thread-safe and fork-safe threading layer
# (dpinfer/_threading_layer.py). pip -qq prints errors only: setuptools' note that an
# editable install of a package-dir mapping (models/ -> dpinfer.models) goes through an
# import finder is not a problem.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --quiet "torch==$(TORCH_VERSION)"
	$(BIN)/python -m pip install --quiet --quiet -e ".[test,distributed,neural,parquet,nutpie,jax]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dpinfer run poisson-count --out out/poisson-count

# The suite runs on every core (pytest-xdist; see tests/conftest.py) and ends with its
# 15 slowest tests. Its processes (the workers, notebook kernels, command-line runs) share
# the bytecode of dpinfer and of the tests in __pycache__, even where the environment says
# not to write it (PYTHONDONTWRITEBYTECODE): collecting the tests 12-13 -> 10 CPU s a worker.
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n auto --dist loadscope --durations=15

# mypy checks dpinfer/ (pyproject.toml's [tool.mypy]); its cache makes a second run quick
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check dpinfer models tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info out .pytest_cache .ruff_cache .mypy_cache
