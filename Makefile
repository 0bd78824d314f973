# gpuposture: the commands a newcomer needs. `make demo` and `make test` work on a bare machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PLOTLY_JS := static/vendor/plotly.min.js
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo serve test test-sqlite test-postgres lint lint-deploy format clean test-browser docs

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
# It also writes var/demo.env (DEBUG=1), which manage.py reads, so the README's CLI commands
# (`.venv/bin/python manage.py score`, ...) work on the demo database as written.
demo: install
	mkdir -p var
	printf '# written by make demo: manage.py in this checkout uses the demo settings\nDEBUG=1\n' > var/demo.env
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py demo --host $(HOST) --port $(PORT)
	DEBUG=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

serve: install
	DEBUG=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

# The current two-factor code of a demo account: `make totp USER=security-lead` (DEBUG only).
.PHONY: totp
totp:
	@DEBUG=1 $(BIN)/python manage.py totp_code $(USER)

# Tests: SQLite by default; DATABASE_URL=postgres://... runs the same suite on PostgreSQL.
# TEST_WORKERS pytest-xdist processes, each with its own test database; tests are handed out in
# pytest-django's order (a transactional test, which empties its database, after all the others
# on its worker: `--dist loadfile` would break that); TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 2
test: install
	mkdir -p var
	SECRET_KEY=test-only-not-secret $(BIN)/python -m pytest -q -p no:cacheprovider \
		$(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS))

# Browser tests: Debian's chromium driven by Playwright (never `playwright install`); screenshots
# land in var/screenshots/<test>/. .ci/run installs chromium when it is missing.
# docs/checks.md from the check registry (a test fails when it is stale).
docs: install
	DEBUG=1 $(BIN)/python manage.py catalogue_doc

test-browser: install
	mkdir -p var
	GPUPOSTURE_BROWSER=1 SECRET_KEY=test-only-not-secret SECURE_SSL_REDIRECT=0 SECURE_HSTS_SECONDS=0 \
		SQLITE_TEST_NAME=$(CURDIR)/var/test-browser.sqlite3 \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/browser

# Fuzzing (bench/fuzz.py): schemathesis against our OpenAPI schema as a security lead and as a
# tenant viewer (their tokens), every operation, reads and writes, in a throwaway database with
# the demo world (DATABASE_URL=postgres://... for PostgreSQL) and no network but loopback:
# no 5xx, every documented response matches its schema. fuzz-ci is the bounded run CI makes.
.PHONY: fuzz fuzz-ci
FUZZ_EXAMPLES ?= 100
FUZZ_ROLES ?= security_lead,tenant_viewer
fuzz: install
	$(BIN)/python bench/fuzz.py --max-examples $(FUZZ_EXAMPLES) --roles $(FUZZ_ROLES)

fuzz-ci: install
	$(BIN)/python bench/fuzz.py --ci

# Every bench in bench/ at a tiny size (bench/smoke.sh): each exits 0 and each measured request
# answered 200. About a minute and a half on 2 cores; needs PostgreSQL for the load bench.
.PHONY: bench-smoke
bench-smoke: install
	bash bench/smoke.sh

# Production settings need both keys; these are placeholders, used by no running app (mypy's
# django plugin loads the settings too).
LINT_ENV := SECRET_KEY=lint-only GPUPOSTURE_MFA_ENCRYPTION_KEY=lint-only-not-a-secret-0123456789

lint: install
	mkdir -p var
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(LINT_ENV) $(BIN)/python manage.py check
	$(LINT_ENV) $(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/lint-imports
	$(LINT_ENV) $(BIN)/mypy

# Checkov over deploy/ and the Dockerfile (its own throwaway venv under var/): zero failed checks.
lint-deploy:
	bash deploy/lint.sh

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var static/vendor
