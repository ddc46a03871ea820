# MemLens: `make repro` builds the offline benchmark and evaluates the built-in baselines;
# `make test` runs the test suite. Both install what they need into .venv (idempotent).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
PY := $(BIN)/python
export PATH := $(BIN):$(PATH)
export DVC_NO_ANALYTICS := 1
export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := true
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export TOKENIZERS_PARALLELISM := false
UI_PORT ?= 5000
BASELINES ?= chance

.PHONY: install install-ml repro test test-fast ui leaderboard bench params

install: $(VENV)/.installed

# The ML stack (transformers backend, open_clip filter channels): torch 2.14.1 + torchvision 0.29.1
# (from local disk here), transformers, open_clip; replaces no pin of requirements.lock.
install-ml: $(VENV)/.installed-ml

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q pip==26.3
	$(PY) -m pip install -q --no-deps -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.installed-ml: requirements-ml.lock $(VENV)/.installed
	$(PY) -m pip install -q --no-deps -r requirements-ml.lock
	touch $@

# Build the benchmark and evaluate the default system (refuse) with DVC, then every other built-in
# baseline as a DVC experiment (only evaluate/judge/report run), then refresh the leaderboard.
repro: install
	@git rev-parse --git-dir >/dev/null 2>&1 || { echo "make repro needs a git checkout (DVC experiments)"; exit 2; }
	dvc repro
	@for m in $(BASELINES); do echo "== dvc exp run -S model=$$m"; dvc exp run -S model=$$m || exit 1; done
	dvc exp run
	memlens leaderboard
	@echo "Leaderboard: reports/leaderboard.md   (MLflow UI: make ui)"

test: install install-ml
	$(PY) -m pytest -n 2 --dist loadfile

test-fast: install
	$(PY) -m pytest -n 2 -m "not slow"

ui: install
	mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port $(UI_PORT) --workers 1

leaderboard: install
	memlens leaderboard

# Regenerate params.yaml from conf/ (what `dvc exp run` does); commit it when conf/ changes.
params: install
	memlens compose

bench: install
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
