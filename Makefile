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

.PHONY: install run test mutate test-gpu gpu-verify gpu-course-check lint format bench-gpu bench-cli docs clean system-deps

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
# deploy/ files run in front of a real server). Without them those tests skip and say why.
SYSTEM_PACKAGES := $(if $(wildcard /usr/bin/chromium),,chromium) $(if $(shell command -v bwrap),,bubblewrap) \
	$(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) $(if $(wildcard /usr/sbin/nginx),,nginx) \
	$(if $(wildcard /usr/bin/caddy),,caddy)
system-deps:
	@if [ -n "$(strip $(SYSTEM_PACKAGES))" ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian packages for the tests: $(strip $(SYSTEM_PACKAGES))"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null) || \
		echo "could not install $(SYSTEM_PACKAGES): the tests that need them will be skipped"; \
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
	@$(PHASE) lint $(MAKE) --no-print-directory lint
	@$(PHASE) unit $(BIN)/python -m pytest -q -m "not browser"
	@$(PHASE) browser $(BIN)/python -m pytest -q -m "browser and not gpu"
	@$(PHASE) content $(BIN)/tritonlab dev check
	@$(PHASE) wheel scripts/wheel_smoke.sh
	@$(PHASE) mutate $(BIN)/python scripts/mutate.py --ci --min-score 0.85
	@echo "=== make test: where the time went ==="; cat .phase-times

# Break the product on purpose, one mutation at a time, and check that the tests notice (docs/testing.md).
mutate: install
	$(BIN)/python scripts/mutate.py --min-score 0.85

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
