# The two commands: `make demo` and `make test`. Each sets up what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-python lint typecheck bench bench-quick clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/agent-server demo

test: lint typecheck test-python

lint: $(STAMP)
	$(BIN)/ruff check agent_server tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

test-python: $(STAMP)
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/agent-server bench --json .bench/latest.json

bench-quick: $(STAMP)
	$(BIN)/agent-server bench --quick

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
