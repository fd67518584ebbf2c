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

.PHONY: demo test figures benchmarks clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/synthmi demo --out synthmi-demo

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

figures: $(STAMP)
	$(BIN)/python benchmarks/figures.py

benchmarks: $(STAMP)
	for f in benchmarks/evaluation.py benchmarks/synthesis.py benchmarks/risk.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytensor synthmi-demo .pytest_cache
