# The two commands of the README: `make demo` and `make test`.
# Both create .venv when missing and install the project with its dev extras.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check lint typecheck unit schema clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/council demo

test: $(STAMP) check
	$(BIN)/python -m pytest -q

check: lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check council workers tests benchmarks migrations
	$(BIN)/ruff format --check council workers tests benchmarks migrations

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

# Regenerate schema/ from a database built by the migrations.
schema: $(STAMP)
	$(BIN)/python -m tests.migrations.schema_dump --write
	$(BIN)/python -m tests.published --write

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
