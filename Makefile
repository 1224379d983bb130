# The two commands: `make demo` and `make test`. Each sets up what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

MCP_SERVERS_DIR := tests/mcp_servers
MCP_SERVERS_STAMP := $(MCP_SERVERS_DIR)/node_modules/.installed

.PHONY: dist demo test ci test-python test-acp-node lint typecheck protocol bench bench-quick bench-peers bench-recall bench-conformance bench-scale system-deps mcp-test-servers soak soak-test clean

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

# What `.ci/run` runs once the machine has its packages: `make test` and the extension in a
# real VS Code, two at a time (`make -j2 ci`): the Python suite, the longest, from the start in
# one slot, everything else one after another in the other, where its workers leave a core a
# third of the time (the e2e mostly waits on VS Code). Not the quick benchmark: its figures,
# taken beside the suite, say little (the server's cold start read 0.71 s there, 0.51 s beside
# the e2e alone), and the suite runs each benchmark small (tests/benchmarks/).
ci: test-python lint typecheck test-acp-node test-extension e2e-vscode

lint: $(STAMP)
	$(BIN)/ruff check agent_server tests benchmarks
	$(BIN)/python -m agent_server.lsp.typescript --check

typecheck: $(STAMP)
	$(BIN)/mypy

# The extension's TypeScript generated from the Python descriptions (agent_server/lsp/
# typescript.py); the test suite fails when the committed files are out of date.
protocol: $(STAMP)
	$(BIN)/python -m agent_server.lsp.typescript

# Two workers more than the cores: a worker waits on the processes its tests drive (the server
# over stdio, the simulator, commands) much of the time, the more since the agents it drives
# are forked rather than started (tests/forked_agent.py). On two cores, measured in turn:
# 3 workers 519 s (1.5 cores busy), 4 workers 465 s. With 2,261 tests, a clean-clone `.ci/run`
# here took 693-746 s with 4 workers (five runs) and 682 and 783 s with 6: no gain to see.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
# A worker with nothing left takes tests queued on another (`worksteal`): xdist's default
# (`load`) hands tests out ahead, and a worker can be left with a queue of long ones while the
# others idle. The suite alone, 4 workers, one run after the other: 395 s with `worksteal`,
# then 473 s with `load`. In CI, where the other slot keeps both cores busy too, no gain is
# clear: clean-clone `.ci/run`s took 743 s (within the 670-783 s measured with `load`), then
# 488, 477 and 469 s later the same day: the machine varies more than any scheduling.
# The slowest tests are printed: where a slow CI run's time went (a test that waited out its
# guard instead of its program, a machine slower that day).

test-python: $(STAMP) system-deps $(MCP_SERVERS_STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15

# `agent-server acp` driven over stdio by @agentclientprotocol/sdk (tests/acp/node).
ACP_NODE := tests/acp/node
ACP_NPM_STAMP := $(ACP_NODE)/node_modules/.installed

$(ACP_NPM_STAMP): $(ACP_NODE)/package.json $(ACP_NODE)/package-lock.json
	cd $(ACP_NODE) && npm ci --no-audit --no-fund
	touch $@

test-acp-node: $(STAMP) $(ACP_NPM_STAMP)
	cd $(ACP_NODE) && AGENT_SERVER=$(abspath $(BIN))/agent-server npm test

# ripgrep: the grep tool uses it when installed, and its tests cover both paths.
# bubblewrap: the bash sandbox (its tests are skipped, with the reason, where it cannot run).
system-deps:
	@command -v rg >/dev/null && command -v bwrap >/dev/null && command -v tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep bubblewrap tmux; }

# The crash soak: SIGKILL the server at random points across many turns, reopen, check the
# ledger (tests/hardening/soak.py). Minutes of wall time: not part of `make test` or CI.
soak: $(STAMP) system-deps
	$(BIN)/python -m tests.hardening.soak --kills 40

# `make test` and the VS Code e2e three times in a row beside two busy loops: a test that
# races the program it drives fails here (tests/hardening/under_load.sh). Not in CI.
soak-test:
	bash tests/hardening/under_load.sh

# Real MCP servers from npm (pinned in package-lock.json) for the end-to-end tests.
$(MCP_SERVERS_STAMP): $(MCP_SERVERS_DIR)/package.json $(MCP_SERVERS_DIR)/package-lock.json
	cd $(MCP_SERVERS_DIR) && npm ci --no-audit --no-fund
	touch $@

mcp-test-servers: $(MCP_SERVERS_STAMP)

bench: $(STAMP)
	$(BIN)/agent-server bench --json .bench/latest.json

# The quick benchmarks, then agent-server alone on two of the real-code sessions (32k window,
# both summarisers; the sources come from PyPI, cached): figures printed, never asserted.
bench-quick: $(STAMP)
	$(BIN)/agent-server bench --quick
	$(BIN)/agent-server bench recall --quick

# pi, Claude Code and Codex (from npm, pinned, cached in ~/.cache/agent-server/peers) and
# agent-server on one scripted session against the simulator. Not in CI: a few hundred MB.
bench-peers: $(STAMP)
	$(BIN)/agent-server bench peers

# The recall benchmark: every client on the real-code suite, 32k and 200k windows, faithful and
# lossy summariser (60 runs; about two hours here). Not in CI.
bench-recall: $(STAMP)
	$(BIN)/agent-server bench recall --json .bench/recall.json

# compaction-conformance-kit 0.8.0 through the product's compaction (a minute).
bench-conformance: $(STAMP)
	$(BIN)/agent-server bench conformance --json .bench/conformance.json

# The harness on workspaces of 133 to 114,000 files (real sdists from PyPI and synthetic trees,
# built once in ~/.cache/agent-server/scale, about 1 GB): issue 49's figures. Not in CI.
bench-scale: $(STAMP)
	$(BIN)/agent-server bench scale --json .bench/scale.json

# The sdist and the wheel a release would upload, in dist/ (checked by tests/test_release.py).
dist: $(STAMP)
	$(BIN)/python -m hatchling build -d dist

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache client-vscode/node_modules client-vscode/dist \
		$(ACP_NODE)/node_modules $(MCP_SERVERS_DIR)/node_modules

include client-vscode/extension.mk
