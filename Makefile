# Quick start: `make serve` (install + run on the embedded SQLite database) and
# `make test` (install + run the whole test suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-test install-dev install-kit install-docs serve demo test lint docs reference kit-types schema js-install js-test assets

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Serving installs the runtime dependencies only; the test and maintainer tools are extras.
$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The producer kit (clients/python, its own distribution) is installed beside the server
# for its tests.
$(VENV)/.test: pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,docs]' -e clients/python
	touch $@

$(VENV)/.dev: pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e clients/python
	touch $@

# The producer kit alone (the demo agent and the agent loop), beside the runtime install.
$(VENV)/.kit: clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e clients/python
	touch $@

# The documentation site's tools alone (`make docs`): the docs extra, no test tools.
$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

install: $(VENV)/.runtime
install-kit: $(VENV)/.kit
install-docs: $(VENV)/.docs
install-test: $(VENV)/.test
install-dev: $(VENV)/.dev

serve: install
	$(BIN)/chatql serve --host $(HOST) --port $(PORT)

# The demo agent (no model, no key) answering the assistant `demo` of the server that
# `make serve` runs: start it in a second terminal, then talk to it in the web app.
ASSISTANT ?= demo
demo: install-kit
	$(BIN)/chatql-client demo --url http://$(HOST):$(PORT)/graphql --assistant $(ASSISTANT)

# The JavaScript unit tests run first, so pytest prints the closing summary line. pytest
# runs one worker per core (`PYTEST_WORKERS=0` runs in this process, as for a debugger);
# a worker that finishes its share takes tests from another's.
PYTEST_WORKERS ?= auto
test: install-test js-test docs
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The documentation site, built strictly (a broken link or a missing page fails).
docs: install-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(VENV)/site

# Front-end packages: installed with `npm ci` when Node.js is there (CI requires it).
NPM_DIRS := clients/js clients/web
HAVE_NPM := $(shell command -v npm >/dev/null 2>&1 && echo yes)

js-install:
ifeq ($(HAVE_NPM),yes)
	@for dir in $(NPM_DIRS); do \
	  if [ ! -f $$dir/node_modules/.package-lock.json ] || \
	     [ $$dir/package-lock.json -nt $$dir/node_modules/.package-lock.json ]; then \
	    (cd $$dir && npm ci --no-audit --no-fund) || exit 1; \
	  fi; \
	done
else
	@if [ "$$CI" = "true" ]; then echo "CI requires Node.js and npm" >&2; exit 1; fi
	@echo "Node.js is not installed: the JavaScript tests are skipped"
endif

js-test: js-install
ifeq ($(HAVE_NPM),yes)
	cd clients/js && npx tsc -p tsconfig.test.json && npx vitest run
	# The package as published: pack, install the tarball into an empty folder, import it.
	cd clients/js && node test/pack/check.mjs
	cd clients/web && npx tsc -p tsconfig.json && npm run check-codegen
endif

# Rebuild the web app and playground into gql/static (commit the result).
assets: js-install
	cd clients/web && npm run build

# Everything derived from the schema and the clients' sources, in the order each reads the
# one before (commit the result; the test suite fails when any of it drifts):
# schema.graphql, the GraphQL schema's pages written from it, the producer kit's wire
# types and message selection (as `make kit-types`), the TypeScript client's and the web
# app's typed documents (graphql-codegen), the TypeScript client's pages written by
# TypeDoc from its sources, and the web app's build in gql/static (which bundles the
# client). The last three need Node.js.
reference: schema install-docs js-install
	$(BIN)/python docs/reference/_generate_schema.py
	$(BIN)/python docs/reference/_generate_plans.py
	$(BIN)/python clients/python/generate_types.py
ifeq ($(HAVE_NPM),yes)
	cd clients/js && npm run --silent codegen && npm run --silent docs:reference
	cd clients/web && npm run --silent codegen && npm run --silent build
else
	@echo "Node.js is not installed: the TypeScript reference (docs/reference/ts) is not rewritten" >&2
	@exit 1
endif

# mypy reads modules from paths, not through the editable install's import hook: it is
# shown the installed layout (chatql/gql, chatql/store) as links to the two folders.
lint: install-dev
	$(BIN)/ruff check store gql tests bench clients/python docs/reference
	$(BIN)/lint-imports --no-cache
	mkdir -p $(VENV)/mypy-path/chatql
	ln -sfn $(CURDIR)/gql $(VENV)/mypy-path/chatql/gql
	ln -sfn $(CURDIR)/store $(VENV)/mypy-path/chatql/store
	cd $(VENV)/mypy-path && MYPYPATH=. $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
	  --namespace-packages --explicit-package-bases -p chatql.gql -p chatql.store
	cd clients/python && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml src/chatql_client
	$(BIN)/mypy --config-file pyproject.toml clients/python/generate_types.py

schema: install
	$(BIN)/chatql export-schema

# The producer kit's wire types (clients/python/src/chatql_client/types.py) and the message
# selection its documents share (leaves.py), written from schema.graphql and the kit's documents (commit the result; the test suite fails when it
# drifts). graphql-core comes with the runtime install; the kit itself need not be installed.
kit-types: install
	$(BIN)/python clients/python/generate_types.py
