# Set-up and entry points. `make run` runs the main job; `make test` type-checks (mypy) and runs the tests.
PYTHON_BOOT := $(shell scripts/find_python.sh)
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run run-quick test test-all bench install

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON_BOOT)" || { scripts/find_python.sh; exit 1; }
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,benchmarks]"
	touch $@

install: $(VENV)/.installed

run: install
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(VENV)/bin/pragmodels run fits/social_meaning.json

run-quick: install
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(VENV)/bin/pragmodels run fits/social_meaning.json --quick

test: install
	$(VENV)/bin/mypy pragmodels
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(PY) -m pytest -q -m "not slow" tests

test-all: install
	$(VENV)/bin/mypy pragmodels
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(PY) -m pytest -q tests

bench: install
	$(PY) benchmarks/listener_table.py
	$(PY) benchmarks/fit_speed.py
