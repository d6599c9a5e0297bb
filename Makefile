# Quick start: `make serve` (install + run on the embedded SQLite database) and
# `make test` (install + run the whole test suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install serve test lint schema bench-quick

$(BIN)/chatql: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/chatql

serve: install
	$(BIN)/chatql serve --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check store gql tests bench
	$(BIN)/mypy store gql

schema: install
	$(BIN)/chatql export-schema
