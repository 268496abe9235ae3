# tritonlab — two commands on a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# GPU=1 keeps the platform's torch (CUDA build); the default pins the CPU stack when no GPU is present.
GPU ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 1 || echo 0)
CONSTRAINTS := $(if $(filter 1,$(GPU)),,-c constraints-cpu.txt)
STAMP := $(VENV)/.installed-$(GPU)
# `make run PORT=8080` serves on another port (tritonlab serve --port; 0 picks any free one)
PORT ?= 8000

.PHONY: install run test test-deps mutate test-gpu gpu-verify gpu-course-check lint format bench-gpu bench-cli docs clean system-deps

$(STAMP): pyproject.toml constraints-cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(CONSTRAINTS) -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

run: install
	@$(BIN)/tritonlab doctor || true
	@if $(BIN)/tritonlab serve --help >/dev/null 2>&1; then \
		exec $(BIN)/tritonlab serve --port $(PORT); \
	else \
		$(BIN)/tritonlab list && $(BIN)/tritonlab show 1 && $(BIN)/tritonlab init tritonlab-work && \
		cd tritonlab-work && exec ../$(BIN)/tritonlab watch; \
	fi

# System packages for the tests, from Debian when we may (root with apt-get), never downloaded binaries:
# chromium for the browser tests, bubblewrap for the hardened sandbox, postgresql for the classroom tests on a
# real PostgreSQL (started by the test run as `nobody`), nginx and caddy for the deployment tests (the shipped
# deploy/ files run in front of a real server), nodejs and npm for the OIDC tests' provider (Debian 12's nodejs is 18:
# those tests want 20+ and skip, saying so). Without them those tests skip and say why.
SYSTEM_PACKAGES := $(if $(wildcard /usr/bin/chromium),,chromium) $(if $(shell command -v bwrap),,bubblewrap) \
	$(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) $(if $(wildcard /usr/sbin/nginx),,nginx) \
	$(if $(wildcard /usr/bin/caddy),,caddy) $(if $(shell command -v node),,nodejs) $(if $(shell command -v npm),,npm)
system-deps:
	@if [ -n "$(strip $(SYSTEM_PACKAGES))" ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian packages for the tests: $(strip $(SYSTEM_PACKAGES))"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null) || \
		echo "could not install $(SYSTEM_PACKAGES): the tests that need them will be skipped"; \
	fi

# The real OpenID provider the OIDC tests start (npm oidc-provider, pinned by tests/oidc/package-lock.json), when
# node (20 or newer) and npm are here; without them those tests skip and say why. Reinstalled only when the lock
# file changes. The test session runs the same `npm ci` itself when it finds the package missing (tests/oidc_provider.py).
OIDC_DIR := tests/oidc
test-deps:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		if [ ! -f $(OIDC_DIR)/node_modules/.package-lock.json ] || \
			[ $(OIDC_DIR)/package-lock.json -nt $(OIDC_DIR)/node_modules/.package-lock.json ]; then \
			echo "installing the test OpenID provider (npm ci in $(OIDC_DIR))"; \
			(cd $(OIDC_DIR) && npm ci --no-audit --no-fund --loglevel=error) || \
			echo "npm ci failed in $(OIDC_DIR): the OIDC tests will be skipped"; \
		fi; \
	else \
		echo "node or npm not found: the OIDC tests will be skipped (install Node.js 20+ with npm: make system-deps)"; \
	fi

lint: install
	$(BIN)/ruff check src tests scripts benchmarks course
	$(BIN)/ruff format --check src tests scripts benchmarks

format: install
	$(BIN)/ruff format src tests scripts benchmarks
	$(BIN)/ruff check --fix src tests scripts benchmarks course

# Each phase prints its duration (scripts/phase.sh) and the last lines sum them up, so CI time has an owner.
PHASE := scripts/phase.sh
test:
	@rm -f .phase-times
	@$(PHASE) install $(MAKE) --no-print-directory install
	@$(PHASE) system-deps $(MAKE) --no-print-directory system-deps
	@$(PHASE) test-deps $(MAKE) --no-print-directory test-deps
	@$(PHASE) lint $(MAKE) --no-print-directory lint
	@$(PHASE) unit $(BIN)/python -m pytest -q -m "not browser"
	@$(PHASE) browser $(BIN)/python -m pytest -q -m "browser and not gpu"
	@$(PHASE) content $(BIN)/tritonlab dev check
	@$(PHASE) wheel scripts/wheel_smoke.sh
	@$(PHASE) mutate $(BIN)/python scripts/mutate.py --ci --min-score 0.90
	@echo "=== make test: where the time went ==="; cat .phase-times

# Break the product on purpose, one mutation at a time, and check that the tests notice (docs/testing.md).
mutate: install
	$(BIN)/python scripts/mutate.py --min-score 0.95

test-gpu: install
	$(BIN)/python -m pytest -q -m gpu

# Every course solution must pass (and every starter fail) on the GPU too; writes the verdicts as JSON into a new
# run folder docs/gpu-runs/<date>-<gpu>-<commit>/ (its README is yours to write: scripts/gpu_runs.py check).
gpu-course-check: install
	@run=docs/gpu-runs/$$($(PY) scripts/gpu_runs.py name) && mkdir -p $$run && \
		{ $(BIN)/tritonlab dev check --backend gpu --json > $$run/course-check.json; code=$$?; \
		echo "wrote $$run/course-check.json"; exit $$code; }

bench-gpu: install
	$(BIN)/python scripts/bench_gpu.py && $(BIN)/python scripts/bench_report.py

bench-cli: install
	$(BIN)/python scripts/bench_cli.py

docs: install
	$(BIN)/python scripts/gen_cli_docs.py
	$(BIN)/python scripts/outcomes.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# The GPU machine's CI substitute (docs/gpu-runs/): doctor, GPU tests, check latency, dev check on the GPU.
# The run goes into a new folder of $(GPU_VERIFY_RUNS) named <date>-<gpu>-<commit> at run time, with its README
# (the commit: TRITONLAB_COMMIT, else git's HEAD); GPU_VERIFY_OUT=DIR writes into DIR itself instead.
# Where tritonlab and its dependencies are importable already (a GPU image without network, PYTHONPATH set),
# it runs with $(PYTHON) and installs nothing; otherwise it installs first, as everywhere.
GPU_VERIFY_RUNS ?= docs/gpu-runs
GPU_VERIFY_OUT ?=
GPU_VERIFY_ARGS ?=
GPU_VERIFY_WHERE = $(if $(GPU_VERIFY_OUT),--out $(GPU_VERIFY_OUT),--runs $(GPU_VERIFY_RUNS))
gpu-verify:
	@if $(PYTHON) -c "import tritonlab, torch, triton, fastapi, typer" >/dev/null 2>&1; then \
		$(PYTHON) scripts/gpu_verify.py $(GPU_VERIFY_WHERE) $(GPU_VERIFY_ARGS); \
	else \
		$(MAKE) --no-print-directory install && $(PY) scripts/gpu_verify.py $(GPU_VERIFY_WHERE) $(GPU_VERIFY_ARGS); \
	fi
