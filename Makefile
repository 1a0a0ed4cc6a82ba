# `make dev` runs the platform, `make test` runs every check. Both install what they need
# into .venv first (Python 3.11+, pip and the package registries are all a machine needs).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: dev test test-external install lint lock bench clean help

help:  ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet --constraint constraints.txt --editable '.[dev,local,langgraph,agents]'
	@touch $(STAMP)

install: $(STAMP)  ## Create .venv and install the project with its pinned dependencies

dev: $(STAMP)  ## Run PostgreSQL, migrations, Dagster (:3000) and the API (:8080)
	exec $(BIN)/memory-platform dev

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check .

# The suite runs in one worker per core (at most 4, pytest-xdist); every worker shares the
# embedded server and makes its own template database.
# Only the browser tests need Chromium: `make test` installs it where it can (apt as root or
# with sudo); elsewhere those tests skip, saying why (`make dev` never needs a browser).
test: $(STAMP)  ## ruff + pytest against the embedded PostgreSQL
	scripts/install-browser
	$(BIN)/ruff check .
	$(BIN)/pytest -q -n auto --maxprocesses=4

# The "external PostgreSQL" profile: Debian's PostgreSQL 15 (not the embedded 18) with pgvector
# built from Debian's source package, installed and started by scripts/external-postgres
# (root/apt on first use). Smoke: `db migrate`, `db status`, `demo seed` and `dream run`
# through the CLI with MEMORY_DATABASE_URL as a non-superuser role (Dagster's storage in the
# database `dagster` of that server). Then the subset EXTERNAL_TESTS with
# MEMORY_TEST_DATABASE_URL (superuser): migrations, write, search, Dreaming, Dagster, API.
# Subset (about 4 minutes on 2 busy cores): migrations + schema guards, the write path, search
# (not its plan/property/lexicon/feedback files: minutes of data setup), Dreaming, Dream
# assets through Dagster, the API's memory/dream/isolation routes, backup and restore (into a
# server before 17 through psql: docs/operations.md). Left out: the embedded server's own tests.
EXTERNAL_TESTS ?= tests/db/test_migrations.py tests/db/test_schema_guards.py \
	tests/db/test_gated_memories.py tests/db/test_connection_smoke.py tests/db/test_backup.py \
	tests/memories --ignore=tests/memories/test_bulk.py \
	tests/retrieval/test_search.py tests/retrieval/test_filters.py \
	tests/retrieval/test_citation.py tests/retrieval/test_chunk_audience.py \
	tests/retrieval/test_planner.py tests/retrieval/test_history_visibility.py \
	tests/retrieval/test_read_bounds.py \
	tests/dreaming tests/dagster/test_dream_assets.py tests/dagster/test_definitions.py \
	tests/api/test_memory_routes.py tests/api/test_dream_routes.py \
	tests/api/test_isolation.py tests/api/test_health.py
EXTERNAL_SMOKE_ENV = MEMORY_EMBEDDING_PROVIDER=hash MEMORY_MAINTENANCE_DEFAULT_MODEL=extractive

test-external: $(STAMP)  ## The test subset + a CLI smoke run against Debian's PostgreSQL 15 + pgvector
	scripts/external-postgres stop --clean
	@set -e; trap 'scripts/external-postgres stop --clean' EXIT; \
	scripts/external-postgres start >/dev/null; \
	app_url=$$(scripts/external-postgres app-url); test_url=$$(scripts/external-postgres url); \
	smoke=$$(mktemp -d); root=$$(pwd); \
	echo "== smoke: the CLI against MEMORY_DATABASE_URL (role memory, $$(scripts/external-postgres status 2>&1 | head -1))"; \
	(cd $$smoke && export MEMORY_DATABASE_URL=$$app_url MEMORY_DATA_DIR=$$smoke/state $(EXTERNAL_SMOKE_ENV) \
	  && $$root/$(BIN)/memory-platform db migrate && $$root/$(BIN)/memory-platform db status \
	  && $$root/$(BIN)/memory-platform demo seed >/dev/null \
	  && $$root/$(BIN)/memory-platform dream run --all-eligible --instance demo); \
	rm -rf $$smoke; \
	echo "== pytest $(EXTERNAL_TESTS) against the external server (MEMORY_TEST_DATABASE_URL)"; \
	MEMORY_TEST_DATABASE_URL=$$test_url $(BIN)/pytest -q $(EXTERNAL_TESTS)

lock: $(BIN)/python  ## Re-resolve dependencies and rewrite constraints.txt
	$(BIN)/pip install --quiet --upgrade --editable '.[dev,local,langgraph,agents]'
	$(BIN)/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:  ## Remove the venv and local state (the embedded database included!)
	rm -rf $(VENV) .memory-platform .pytest_cache .ruff_cache
