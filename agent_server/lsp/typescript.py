"""What is generated from the one Python description of each fact, as Codex generates its
app-server protocol's TypeScript from its Rust types.

`python -m agent_server.lsp.typescript` (`make protocol`) writes the files below; `--check`
(and the test suite, so CI) fails when a committed one is not what the description gives.
Nothing here runs in the server.

- client-vscode/src/protocol/types.ts: the editor protocol (agent_server/protocol.py): an
  interface per TypedDict (a field's docstring as its comment), a union per Literal or union
  alias, the method names and error codes;
- client-vscode/src/protocol/providers.ts: the `provider` setting's values and the API keys
  they read (agent_server/llm/providers.py);
- the method table of docs/protocol.md, between its two `protocol-table` markers;
- the settings, from their one description (agent_server/lsp/settings_out.py):
  client-vscode/package.json's, client-vscode/src/protocol/settings.ts, types.ts's
  `AgentSettings`, and the README's table.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import json
import re
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import (
    Any,
    Literal,
    NewType,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from agent_server import protocol
from agent_server.llm.providers import API_KEYS, DEFAULT_PROVIDER, PROVIDERS
from agent_server.lsp import settings_out

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_DOC = ROOT / "docs" / "protocol.md"
PACKAGE_JSON = ROOT / "client-vscode" / "package.json"
README = ROOT / "README.md"
TABLE_START = "<!-- protocol-table: generated from agent_server/protocol.py by `make protocol` -->"
TABLE_END = "<!-- /protocol-table -->"


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


# --- types.ts ------------------------------------------------------------------------------


def types_ts() -> str:
    """client-vscode/src/protocol/types.ts."""
    names = _aliases()
    docs = _docs()
    out = [
        _header("agent_server/protocol.py"),
        "/**",
        " * Wire types of the agent-server editor protocol (docs/protocol.md). camelCase, exactly",
        " * as sent. Nothing here depends on the `vscode` API; the webview bundle imports it too.",
        " */",
        "import type { Provider } from './providers';",
    ]
    for name, value in vars(protocol).items():
        block = (
            settings_out.settings_interface(_value_sets(names))
            if value is protocol.AgentSettings
            else _declaration(name, value, names, docs)
        )
        if block:
            out += ["", *block]
    out += ["", "/** Error codes of docs/protocol.md. */", "export const ErrorCodes = {"]
    out += [f"  {key}: {code}," for key, code in protocol.ERROR_CODES.items()]
    out += ["} as const;", "", "/** Method names, one place. */", "export const Methods = {"]
    seen: set[str] = set()
    for method in protocol.METHODS:
        if method.name not in seen:
            seen.add(method.name)
            out.append(f"  {_method_key(method.name)}: {_ts(method.name)},")
    out.append("} as const;")
    out += _method_maps(names)
    return "\n".join(out) + "\n"


def _method_maps(names: Mapping[Any, str]) -> list[str]:
    """Each method's params and result by its key in `Methods`, for a client typed from the
    method table (client.ts's `request` and `on`): a method added to protocol.py needs no
    TypeScript written by hand."""
    out: list[str] = []
    for title, sender, notification in (
        ("ClientRequests", "client", False),
        ("ClientNotifications", "client", True),
        ("ServerNotifications", "server", True),
        ("ServerRequests", "server", False),
    ):
        out += ["", f"/** The {_METHOD_MAP_DOCS[title]}, by their key in `Methods`. */",
                f"export interface {title} {{"]
        for method in protocol.METHODS:
            if method.sender != sender or method.notification != notification:
                continue
            params = _type(method.params, names)
            if notification:
                out.append(f"  {_method_key(method.name)}: {params};")
            else:
                result = _type(method.result, names)
                out.append(f"  {_method_key(method.name)}: {{ params: {params}; result: "
                           f"{result} }};")
        out.append("}")
    return out


_METHOD_MAP_DOCS = {
    "ClientRequests": "requests the client sends (their params and result)",
    "ClientNotifications": "notifications the client sends (their params)",
    "ServerNotifications": "notifications the server sends (their params)",
    "ServerRequests": "requests the server sends (their params and the client's answer)",
}


def _declaration(
    name: str, value: Any, names: Mapping[Any, str], docs: Mapping[str, str]
) -> list[str]:
    if name.startswith("_"):
        return []
    doc = _comment(docs.get(name))
    if is_typeddict(value):
        if value.__name__ != name:
            return [*doc, f"export type {name} = {value.__name__};"]
        return [*doc, *_interface(value, names, docs)]
    if get_origin(value) is Literal:
        # The values too, for the extension to check a setting against (`<Name>Values`).
        values = _ts(list(get_args(value)))
        return [
            *doc,
            f"export const {name}Values = {values} as const;",
            f"export type {name} = (typeof {name}Values)[number];",
        ]
    if get_origin(value) in (Union, types.UnionType):
        return [*doc, f"export type {name} = {_type(value, names, top=name)};"]
    return []


def _interface(cls: Any, names: Mapping[Any, str], docs: Mapping[str, str]) -> list[str]:
    bases = [b for b in getattr(cls, "__orig_bases__", ()) if is_typeddict(b)]
    inherited = {key for base in bases for key in get_type_hints(base)}
    hints = get_type_hints(cls, vars(protocol), include_extras=True)
    own = [key for key in hints if key not in inherited]
    if not own and not bases:
        return [f"export type {cls.__name__} = Record<string, never>;"]
    extends = f" extends {', '.join(b.__name__ for b in bases)}" if bases else ""
    lines = [f"export interface {cls.__name__}{extends} {{"]
    for key in own:
        hint = hints[key]
        optional = key in cls.__optional_keys__
        if get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        lines += ["  " + line for line in _comment(docs.get(f"{cls.__name__}.{key}"))]
        mark = "?" if optional else ""
        lines.append(f"  {_key(key)}{mark}: {_type(hint, names)};")
    lines.append("}")
    return lines


def _type(hint: Any, names: Mapping[Any, str], top: str | None = None) -> str:
    """The TypeScript for a protocol annotation; a named alias by its name."""
    named = _named(hint, names)
    if named is not None and named != top:
        return named
    origin = get_origin(hint)
    if hint is Any:
        return "unknown"
    if hint is type(None) or hint is None:
        return "null"
    if hint is protocol.AgentSettings:
        return "AgentSettings"
    if isinstance(hint, NewType):
        return "Provider" if hint is protocol.ProviderName else _type(hint.__supertype__, names)
    if is_typeddict(hint):
        return str(hint.__name__)
    simple = {str: "string", int: "number", float: "number", bool: "boolean"}
    if hint in simple:
        return simple[hint]
    if origin is Literal:
        return " | ".join(_ts(value) for value in get_args(hint))
    if origin in (Union, types.UnionType):
        return " | ".join(_type(option, names) for option in get_args(hint))
    if origin is list:
        (item,) = get_args(hint)
        inner = _type(item, names)
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if origin is dict:
        key, item = get_args(hint)
        return f"Record<{_type(key, names)}, {_type(item, names)}>"
    raise TypeError(f"no TypeScript for {hint!r}")


def _named(hint: Any, names: Mapping[Any, str]) -> str | None:
    try:
        return names.get(hint)
    except TypeError:  # unhashable
        return None


def _aliases() -> dict[Any, str]:
    """Literal and union aliases of the protocol, by value (a field of that type is written
    with the alias's name)."""
    out: dict[Any, str] = {}
    for name, value in vars(protocol).items():
        if not name.startswith("_") and get_origin(value) in (Literal, Union, types.UnionType):
            out.setdefault(value, name)
    return out


def _value_sets(names: Mapping[Any, str]) -> dict[tuple[str, ...], str]:
    """The protocol's value sets by their values (the providers' too), for the settings."""
    out = {
        tuple(get_args(alias)): name
        for alias, name in names.items()
        if get_origin(alias) is Literal
    }
    return out | {tuple(PROVIDERS): "Provider"}


def _docs() -> dict[str, str]:
    """The docstrings that follow a module-level alias ("Name") or a TypedDict field
    ("Class.field") in protocol.py."""
    tree = ast.parse(Path(inspect.getfile(protocol)).read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    for node in classes:
        doc = ast.get_docstring(node)
        if doc:
            out[node.name] = doc
    for owner, body in [("", tree.body)] + [(f"{node.name}.", node.body) for node in classes]:
        for statement, after in itertools.pairwise(body):
            target = _target(statement)
            doc = _string(after)
            if target is not None and doc is not None:
                out[owner + target] = inspect.cleandoc(doc)
    return out


def _target(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    return None


def _string(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        value = statement.value.value
        return value if isinstance(value, str) else None
    return None


def _comment(doc: str | None) -> list[str]:
    if not doc:
        return []
    lines = doc.splitlines()
    if len(lines) == 1:
        return [f"/** {lines[0]} */"]
    return ["/**", *[f" * {line}".rstrip() for line in lines], " */"]


def _method_key(name: str) -> str:
    """`agent/mcp/acceptTools` -> `mcpAcceptTools`."""
    parts = name.removeprefix("agent/").split("/")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


# --- the method table of docs/protocol.md -------------------------------------------------


def method_table() -> str:
    """The table of every method, between the markers."""
    lines = [
        TABLE_START,
        "",
        "| method | sent by | params | result | what for |",
        "| --- | --- | --- | --- | --- |",
    ]
    for method in protocol.METHODS:
        result = "(notification)" if method.notification else _fields(method.result)
        lines.append(
            f"| `{method.name}` | {method.sender} | {_fields(method.params)} | {result} "
            f"| {method.summary} |"
        )
    return "\n".join([*lines, "", TABLE_END])


def _fields(cls: Any) -> str:
    keys = [f"{key}?" if key in cls.__optional_keys__ else key for key in get_type_hints(cls)]
    return "`{" + ", ".join(keys) + "}`"


def protocol_doc() -> str:
    """docs/protocol.md with its method table as the description gives it."""
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    return _between(text, PROTOCOL_DOC, TABLE_START, TABLE_END, method_table())


# --- the extension's settings ---------------------------------------------------------------


def package_json() -> str:
    """client-vscode/package.json with its settings as their description gives them."""
    package = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    configuration = package["contributes"]["configuration"]
    configuration["properties"] = settings_out.editor_properties(configuration["properties"])
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"


def settings_ts() -> str:
    """client-vscode/src/protocol/settings.ts."""
    return settings_out.settings_ts(_header("agent_server/agent/settings.py"))


def readme() -> str:
    """README.md with its settings table as the descriptions give it."""
    return _between(README.read_text(encoding="utf-8"), README, settings_out.TABLE_START,
                    settings_out.TABLE_END, settings_out.readme_table())


def _between(text: str, path: Path, start: str, end: str, block: str) -> str:
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{path} has no {start} ... {end} markers")
    return pattern.sub(lambda _match: block, text, count=1)


# --- the files ------------------------------------------------------------------------------

# What is generated, by path from the repository's root.
GENERATED: Mapping[str, Callable[[], str]] = {
    "client-vscode/src/protocol/types.ts": types_ts,
    "client-vscode/src/protocol/providers.ts": providers_ts,
    "docs/protocol.md": protocol_doc,
    "client-vscode/package.json": package_json,
    "client-vscode/src/protocol/settings.ts": settings_ts,
    "README.md": readme,
}


def stale(root: Path = ROOT) -> list[str]:
    """The generated files under `root` whose text differs from what the descriptions give."""
    return [
        name
        for name, render in GENERATED.items()
        if not (root / name).is_file() or (root / name).read_text(encoding="utf-8") != render()
    ]


def write(root: Path = ROOT) -> list[str]:
    """Writes every generated file under `root`; the names of those that changed."""
    changed = stale(root)
    for name in changed:
        (root / name).write_text(GENERATED[name](), encoding="utf-8")
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
            print(f"{name} is out of date: run `make protocol`", file=sys.stderr)
        return 1 if outdated else 0
    for name in write():
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
