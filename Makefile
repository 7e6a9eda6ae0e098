# Set-up and entry points. `make test` installs (with the `lm` extra: llama-cpp-python builds from source, 6-11 min
# the first time), type-checks (mypy) and runs the tests; `make run` runs the main job;
# `make notebook` adds JupyterLab (the notebooks extra) and opens notebooks/.
PYTHON_BOOT := $(shell scripts/find_python.sh)
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run run-quick test test-all bench install notebook test-hf docs

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON_BOOT)" || { scripts/find_python.sh; exit 1; }
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,benchmarks]"
	scripts/install_lm.sh $(PY)
	$(PY) -m pip install --quiet -e ".[dev,benchmarks,lm,docs]"
	touch $@

install: $(VENV)/.installed

$(VENV)/.notebooks: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[dev,benchmarks,notebooks]"
	touch $@

# JupyterLab on notebooks/ (kernels start there; a relative PRAGMODELS_DATA_DIR is resolved against the
# repository root, so ../shared/data works from any folder of the checkout)
# Outputs are stripped when a notebook is staged (nbstripout as a git filter, named in .gitattributes and
# configured for this clone here): after running one, git diff shows nothing and staging it stages nothing.
# As root (a container), Jupyter needs --allow-root.
notebook: $(VENV)/.notebooks
	$(VENV)/bin/nbstripout --install
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} \
	PRAGMODELS_COMPILATION_CACHE=$${PRAGMODELS_COMPILATION_CACHE:-$$HOME/.cache/pragmodels/jax} \
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

run: install
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(VENV)/bin/pragmodels run fits/social_meaning.json

run-quick: install
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(VENV)/bin/pragmodels run fits/social_meaning.json --quick

# the docs site (Sphinx; docs/_build/html), warnings as errors; the API pages are generated anew each time
docs: install
	rm -rf docs/api/generated
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html

test: install docs
	$(VENV)/bin/mypy pragmodels
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(PY) -m pytest -q -m "not slow" tests

test-all: install
	$(VENV)/bin/mypy pragmodels
	PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(PY) -m pytest -q tests

# the transformers backend (pragmodels.lm.hf) on SmolLM2 against llama.cpp: adds the `hf` extra (torch, CUDA build
# from PyPI, about 5.7 GB; a few minutes the first time) and runs its tests
test-hf: install
	$(PY) -m pip install --quiet -e ".[hf]"
	PRAGMODELS_TEST_HF=1 PRAGMODELS_DATA_DIR=$${PRAGMODELS_DATA_DIR:-../shared/data} $(PY) -m pytest -q tests/lm/test_hf.py

bench: install
	$(PY) benchmarks/listener_table.py
	$(PY) benchmarks/fit_speed.py
