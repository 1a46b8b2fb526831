# The README's two commands are `make demo` and `make test`; everything else is optional.
# Each target bootstraps .venv from a plain python3 the first time and reuses it afterwards
# (the stamp file is rebuilt only when pyproject.toml changes).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test test-slow lab bench trace lint spec clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,notebooks,dask]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/avatar-sim demo --out out/demo

test: $(STAMP)
	$(PY) -m pytest -m "not slow" --req-report .trace/results.json $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

trace: $(STAMP)
	-$(PY) -m pytest -q -m "not slow" --req-report .trace/results.json $(PYTEST_ARGS)
	$(PY) -m harness trace .trace/results.json

# JupyterLab refuses to start as root unless told so (containers often run as root).
LAB_FLAGS := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	$(VENV)/bin/jupyter lab $(LAB_FLAGS) notebooks/

bench: $(STAMP)
	$(PY) -m bench

lint: $(STAMP)
	$(VENV)/bin/ruff check sim harness tests bench
	$(VENV)/bin/ruff format --check sim harness tests bench
	$(VENV)/bin/mypy

spec: $(STAMP)
	$(PY) -m harness spec build

clean:
	rm -rf $(VENV) .trace out .pytest_cache .mypy_cache .ruff_cache
