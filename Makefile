# `make dev` runs the platform, `make test` runs every check. Both install what they need
# into .venv first (Python 3.11+, pip and the package registries are all a machine needs).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: dev test install lint lock bench clean help

help:  ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet --constraint constraints.txt --editable '.[dev,local]'
	scripts/install-browser
	@touch $(STAMP)

install: $(STAMP)  ## Create .venv and install the project with its pinned dependencies

dev: $(STAMP)  ## Run PostgreSQL, migrations, Dagster (:3000) and the API (:8080)
	exec $(BIN)/memory-platform dev

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check .

test: $(STAMP)  ## ruff + pytest against the embedded PostgreSQL
	$(BIN)/ruff check .
	$(BIN)/pytest -q

lock: $(BIN)/python  ## Re-resolve dependencies and rewrite constraints.txt
	$(BIN)/pip install --quiet --upgrade --editable '.[dev,local]'
	$(BIN)/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:  ## Remove the venv and local state (the embedded database included!)
	rm -rf $(VENV) .memory-platform .pytest_cache .ruff_cache
