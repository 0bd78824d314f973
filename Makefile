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

install: $(VENV)/.installed $(PLOTLY_JS)

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
