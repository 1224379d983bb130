# The two commands: `make demo` and `make test`. Each sets up what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-python test-acp-node lint typecheck bench bench-quick bench-peers \
	system-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# A whole agent session over LSP against the built-in simulator: no key, no network.
demo: $(STAMP)
	$(BIN)/agent-server demo

# Everything: lint, types, the Python suite, the ACP agent under the official TypeScript
# client, and the VS Code extension's tests.
test: lint typecheck test-python test-acp-node test-extension

lint: $(STAMP)
	$(BIN)/ruff check agent_server tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

test-python: $(STAMP) system-deps
	$(BIN)/pytest -q -n 2

# `agent-server acp` driven over stdio by @agentclientprotocol/sdk (tests/acp/node).
ACP_NODE := tests/acp/node
ACP_NPM_STAMP := $(ACP_NODE)/node_modules/.installed

$(ACP_NPM_STAMP): $(ACP_NODE)/package.json $(ACP_NODE)/package-lock.json
	cd $(ACP_NODE) && npm ci --no-audit --no-fund
	touch $@

test-acp-node: $(STAMP) $(ACP_NPM_STAMP)
	cd $(ACP_NODE) && AGENT_SERVER=$(abspath $(BIN))/agent-server npm test

# ripgrep: the grep tool uses it when installed, and its tests cover both paths.
system-deps:
	@command -v rg >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep; }

bench: $(STAMP)
	$(BIN)/agent-server bench --json .bench/latest.json

bench-quick: $(STAMP)
	$(BIN)/agent-server bench --quick

# pi, Claude Code and Codex (from npm, pinned, cached in ~/.cache/agent-server/peers) and
# agent-server on one scripted session against the simulator. Not in CI: a few hundred MB.
bench-peers: $(STAMP)
	$(BIN)/agent-server bench peers

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache client-vscode/node_modules client-vscode/dist \
		$(ACP_NODE)/node_modules

include client-vscode/extension.mk
