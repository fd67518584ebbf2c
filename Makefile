# The whole set-up on a fresh machine is `make demo` or `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# One BLAS/OpenMP thread per process: PyMC forks one process per chain and
# default BLAS threading oversubscribes the two cores (~10x slower measured).
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
# Keep pytensor's compile cache inside the checkout so fresh clones compile once.
export PYTENSOR_FLAGS ?= base_compiledir=$(CURDIR)/.pytensor

.PHONY: demo test test-fast test-pandas2 test-pandas3 figures benchmarks clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/synthmi demo --out synthmi-demo

# One pytest worker per core (pytest-xdist): the suite is ~900 CPU-seconds of mostly single-threaded
# work, and the thread limits above keep each worker (and the sampler processes it forks) on one thread;
# worksteal: an idle worker takes queued tests from a busy one (the long sampler tests end the run).
PYTEST := python -m pytest -q -n auto --dist worksteal

test: $(STAMP)
	$(BIN)/$(PYTEST) tests

# Everyday work (not set-up): every test but those marked `slow` (long samplers, the
# command-line end-to-end runs, simulation studies), under 3 minutes on 2 cores; `make test`
# still runs everything. --durations=10 names the slowest, so a test that grows is seen.
# Measured (fresh clone, 2 cores, two workers): 1,226 of 1,426 tests in 84 s.
test-fast: $(STAMP)
	$(BIN)/$(PYTEST) -m "not slow" --durations=10 tests

# The suite under one pandas major, in its own venv (.venv-pd2, .venv-pd3; .venv is untouched).
# `make test` (.ci/run) gets the pandas pip resolves, 3.x on a fresh clone; the other major is a
# CI matrix job: `make test-pandas2` (`make test-pandas3` where .venv holds pandas 2).
.venv-pd%/.installed: pyproject.toml
	test -d .venv-pd$* || $(PY) -m venv .venv-pd$*
	.venv-pd$*/bin/pip install --quiet --upgrade pip
	.venv-pd$*/bin/pip install --quiet -e ".[test]" "pandas==$*.*"
	touch $@

test-pandas2 test-pandas3: test-pandas%: .venv-pd%/.installed
	.venv-pd$*/bin/$(PYTEST) tests

figures: $(STAMP)
	$(BIN)/python benchmarks/figures.py

benchmarks: $(STAMP)
	for f in benchmarks/evaluation.py benchmarks/synthesis.py benchmarks/risk.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .venv-pd2 .venv-pd3 .pytensor synthmi-demo .pytest_cache
