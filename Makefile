# gpuposture: the commands a newcomer needs. `make demo` and `make test` work on a bare machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PLOTLY_JS := static/vendor/plotly.min.js
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo serve test test-sqlite test-postgres lint format clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (or run: make PYTHON=python3 ...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# plotly.js is served from our own static files (never a CDN): one file from the pinned package.
$(PLOTLY_JS): $(VENV)/.installed
	mkdir -p static/vendor
	cp "$$($(BIN)/python -c 'import plotly, pathlib; print(pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js")')" $@

# The official SARIF 2.1.0 JSON schema (OASIS, as Microsoft ships it in @microsoft/jest-sarif),
# fetched into var/ for the export test; never committed. Best effort: without npm or the
# registry the test says it skipped and why.
SARIF_SCHEMA := var/schemas/sarif-2.1.0-rtm.5.json
SARIF_NPM := @microsoft/jest-sarif@1.0.0-beta.0

$(SARIF_SCHEMA):
	-@mkdir -p var/schemas && cd var/schemas && \
	  npm pack --silent $(SARIF_NPM) >/dev/null 2>&1 && \
	  tar -xzf microsoft-jest-sarif-*.tgz --strip-components=3 package/lib/schemas/sarif-2.1.0-rtm.5.json && \
	  rm -f microsoft-jest-sarif-*.tgz || echo "SARIF schema not fetched (no npm or registry)"

install: $(VENV)/.installed $(PLOTLY_JS) $(SARIF_SCHEMA)

# Demo: DEBUG on, SQLite under var/, Celery eager; random passwords printed by `demo`.
demo: install
	mkdir -p var
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py demo
	DEBUG=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

serve: install
	DEBUG=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Tests: SQLite by default; DATABASE_URL=postgres://... runs the same suite on PostgreSQL.
test: install
	mkdir -p var
	SECRET_KEY=test-only-not-secret $(BIN)/python -m pytest -q -p no:cacheprovider

lint: install
	mkdir -p var
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	SECRET_KEY=lint-only $(BIN)/python manage.py check
	SECRET_KEY=lint-only $(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var static/vendor
