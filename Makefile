# Two commands for a new user: `make demo` and `make test`. Both work from nothing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DATA ?= ../shared/data
export OMP_NUM_THREADS ?= 2
# no network from tests or the docs build: Haystack's usage telemetry off, MkDocs' banner quiet
export HAYSTACK_TELEMETRY_ENABLED ?= False
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: demo test lint typecheck unit docs docs-cli venv install-dev install-demo bench clean docker-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'

install-demo: $(BIN)/python
	$(BIN)/pip install -q -e '.[models,ingest,llm]'

test: install-dev lint typecheck unit docs

lint:
	$(BIN)/ruff check src tests benchmarks training examples
	$(BIN)/ruff format --check src tests examples

typecheck:
	$(BIN)/mypy

unit:
	$(BIN)/pytest
	$(BIN)/pytest --doctest-modules src/affidavit  # the docstrings' examples run too

# what the docs targets run, installed on first use (a fresh clone has neither)
$(BIN)/mkdocs $(BIN)/typer: $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]'

# the documentation site, built strictly (a broken link or docstring fails the build)
docs: $(BIN)/mkdocs
	$(BIN)/mkdocs build --strict --quiet

# regenerate the CLI reference from the typer app (tests/unit/test_docs.py checks it is current)
docs-cli: $(BIN)/typer
	$(BIN)/typer affidavit.cli.main utils docs --name affidavit --output docs/cli.md

demo: install-demo
	$(BIN)/python -m affidavit.demo

# opt-in, not part of `make test`: builds both container images (installing Debian's docker.io and
# making a base image with debootstrap where needed, as root) and runs them offline
# (docs/how-to/docker.md); STEPS="build audit" runs some steps only
docker-test:
	bash scripts/docker-test.sh

clean:
	rm -rf $(VENV) .affidavit .pytest_cache .mypy_cache .ruff_cache site
