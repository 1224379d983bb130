"""The extension's TypeScript, generated from the one Python description of each fact.

`python -m agent_server.lsp.typescript` (`make protocol`) writes the files below into
client-vscode/src/protocol/; `--check` (run by the test suite, so by CI) fails when a
committed file is not what the description gives. Nothing here runs in the server.

- providers.ts: the `provider` setting's values and the API keys they read
  (agent_server/llm/providers.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from agent_server.llm.providers import API_KEYS, DEFAULT_PROVIDER, PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "client-vscode" / "src" / "protocol"


def _header(source: str) -> str:
    return (
        f"// Generated from {source} by `make protocol`: do not edit.\n"
        "// The test suite fails when this file is not what the description gives.\n"
    )


def _ts(value: object) -> str:
    """A JSON value as a TypeScript literal (single-quoted strings, as the extension writes)."""
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_ts(item) for item in value) + "]"
    if value is None:
        return "null"
    return json.dumps(value)


def _key(name: str) -> str:
    return name if name.isidentifier() else _ts(name)


def providers_ts() -> str:
    """client-vscode/src/protocol/providers.ts."""
    lines = [
        _header("agent_server/llm/providers.py"),
        "/** The values of the setting `provider`. */",
        f"export const PROVIDERS = {_ts(list(PROVIDERS))} as const;",
        "export type Provider = (typeof PROVIDERS)[number];",
        "",
        "/** The provider when the setting is not set. */",
        f"export const DEFAULT_PROVIDER: Provider = {_ts(DEFAULT_PROVIDER)};",
        "",
        "/** The API keys the providers read: one stored secret each, handed to the server under",
        " * its default variable. `providers`: the providers that read it. */",
        "export const KEY_FAMILIES = {",
    ]
    for key in API_KEYS:
        readers = [spec.name for spec in PROVIDERS.values() if spec.key == key]
        lines.append(
            f"  {_key(key.family)}: {{ label: {_ts(key.owner)}, variable: {_ts(key.variable)}, "
            f"providers: {_ts(readers)} }},"
        )
    lines += [
        "} as const;",
        "export type KeyFamily = keyof typeof KEY_FAMILIES;",
        "",
        "/** The key each provider reads (null: it checks none). */",
        "export const PROVIDER_KEYS: Record<Provider, KeyFamily | null> = {",
    ]
    for spec in PROVIDERS.values():
        family = spec.key.family if spec.key is not None else None
        lines.append(f"  {_key(spec.name)}: {_ts(family)},")
    lines.append("};")
    return "\n".join(lines) + "\n"


GENERATED: Mapping[str, Callable[[], str]] = {
    "providers.ts": providers_ts,
}


def stale(out_dir: Path = OUT_DIR) -> list[str]:
    """The generated files whose committed text differs from what the description gives."""
    out = []
    for name, render in GENERATED.items():
        path = out_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render():
            out.append(name)
    return out


def write(out_dir: Path = OUT_DIR) -> list[str]:
    """Writes every generated file; the names of those that changed."""
    changed = stale(out_dir)
    for name in changed:
        (out_dir / name).write_text(GENERATED[name](), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_server.lsp.typescript")
    parser.add_argument(
        "--check", action="store_true", help="fail when a committed file is out of date"
    )
    args = parser.parse_args(argv)
    if args.check:
        outdated = stale()
        for name in outdated:
            print(
                f"client-vscode/src/protocol/{name} is out of date: run `make protocol`",
                file=sys.stderr,
            )
        return 1 if outdated else 0
    for name in write():
        print(f"wrote client-vscode/src/protocol/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
