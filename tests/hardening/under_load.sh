#!/usr/bin/env bash
# `make soak-test`: the whole suite (`make test`) and the VS Code e2e, three times in a row,
# with two busy loops beside them (a machine as loaded as a shared CI runner can be). A test
# that fails here and not on an idle machine races the program it drives: a bug, not bad
# luck. Prints each pass's time; stops at the first failure. Not part of CI (~1 hour).
set -euo pipefail
cd "$(dirname "$0")/../.."
passes=${PASSES:-3}
busy=()
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null || true' EXIT
for pass in $(seq 1 "$passes"); do
  start=$(date +%s)
  if ! make test e2e-vscode > ".soak-pass-$pass.log" 2>&1; then
    echo "pass $pass of $passes FAILED after $(( $(date +%s) - start )) s: .soak-pass-$pass.log"
    tail -40 ".soak-pass-$pass.log"
    exit 1
  fi
  echo "pass $pass of $passes passed in $(( $(date +%s) - start )) s (two busy loops beside it)"
done
