# Two commands for a new user: `make demo` and `make test`. Both work from nothing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DATA ?= ../shared/data
export OMP_NUM_THREADS ?= 2

.PHONY: demo test lint typecheck unit venv install-dev install-demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'

install-demo: $(BIN)/python
	$(BIN)/pip install -q -e '.[models,ingest,llm]'

test: install-dev lint typecheck unit

lint:
	$(BIN)/ruff check src tests benchmarks training
	$(BIN)/ruff format --check src tests

typecheck:
	$(BIN)/mypy

unit:
	$(BIN)/pytest

demo: install-demo
	$(BIN)/python -m affidavit.demo

clean:
	rm -rf $(VENV) .affidavit .pytest_cache .mypy_cache .ruff_cache
