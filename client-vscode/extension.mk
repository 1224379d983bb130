# The VS Code extension's targets, included by the root Makefile (paths from the repo root).
#   make test-extension           npm ci, typecheck, unit tests, webview test (Chromium), the
#                                 client against the real server over stdio, .vsix
#   make test-extension-protocol  only the client against the real server over stdio
#   make e2e-vscode               the .vsix in a real VS Code (code-server) against the server
# $(STAMP) is the root Makefile's .venv stamp (the Python server installed).
EXT_DIR := client-vscode
EXT_NPM_STAMP := $(EXT_DIR)/node_modules/.installed
CHROMIUM ?= /usr/bin/chromium

.PHONY: test-extension test-extension-protocol e2e-vscode extension-chromium extension-package

$(EXT_NPM_STAMP): $(EXT_DIR)/package.json $(EXT_DIR)/package-lock.json
	cd $(EXT_DIR) && npm ci --no-audit --no-fund
	touch $@

extension-chromium:
	@test -x $(CHROMIUM) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

extension-package: $(EXT_NPM_STAMP)
	cd $(EXT_DIR) && npm run package

# The package first, a prerequisite both this and the e2e name: one `make` builds it once, and
# never beside itself.
test-extension: $(STAMP) $(EXT_NPM_STAMP) extension-chromium extension-package
	cd $(EXT_DIR) && npm run typecheck
	cd $(EXT_DIR) && npm run test:unit
	cd $(EXT_DIR) && CHROMIUM_PATH=$(CHROMIUM) npm run test:webview
	cd $(EXT_DIR) && npm run test:protocol

test-extension-protocol: $(STAMP) $(EXT_NPM_STAMP)
	cd $(EXT_DIR) && npm run test:protocol

e2e-vscode: $(STAMP) $(EXT_NPM_STAMP) extension-chromium extension-package
	cd $(EXT_DIR) && CHROMIUM_PATH=$(CHROMIUM) node e2e/vscode.e2e.mjs
