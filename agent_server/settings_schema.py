"""The settings, described once.

Each settings dataclass (agent/settings.py; context/trigger.py's compaction settings) declares
its fields with `setting(...)`: the JSON name, what it means, its bounds, whether it carries
authority, whether the editor offers it. From those fields come the reader (`read`), the check
for keys no setting has (`unknown_keys`), and, by `make protocol` (agent_server/lsp/
typescript.py), the editor's settings in client-vscode/package.json, the extension's table of
them (client-vscode/src/protocol/settings.ts), the `AgentSettings` type of types.ts and the
README's table. Adding a setting is one field here plus the generated files.

A field whose type is a dataclass is a section (`compaction`, `tools.limits`): an object of
settings under the field's camelCase name.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, Union, get_args, get_origin, get_type_hints

from agent_server.errors import ConfigError

SETTING = "agent_server.setting"

# How a value is read (and shown to the editor): derived from the field's type, or named by
# `items` for a list of strings.
Kind: TypeAlias = Literal[
    "boolean", "integer", "number", "string", "folder", "choice", "names", "commands",
    "paths", "object",
]
ListKind: TypeAlias = Literal["names", "commands", "paths"]
LIST_KINDS: tuple[str, ...] = get_args(ListKind)
NUMBER_KINDS: tuple[Kind, ...] = ("integer", "number")
# VS Code's scope for a setting it offers: "machine" is never taken from a workspace.
EditorScope: TypeAlias = Literal["window", "resource", "machine"]


@dataclass(frozen=True, slots=True)
class Setting:
    """What a setting is, beside its field's name, type and default."""

    description: str  # Markdown: VS Code's settings page, the README's table
    # The default in words, when the value is worked out ("the provider's"); None: the value.
    default_text: str | None = None
    # Decides what runs, where, unasked, or where a key goes (docs/security.md): taken only
    # from the user's own settings, never from a workspace's.
    authority: bool = False
    # Offered in VS Code's settings, with this scope (None: not offered there).
    editor: EditorScope | None = None
    name: str | None = None  # the JSON name, when not the field's camelCase (may be dotted)
    values: tuple[str, ...] = ()  # the values of a `str` field (a Literal field has its own)
    value_labels: tuple[str, ...] = ()  # each value's name, where a user picks one
    value_texts: tuple[str, ...] = ()  # what each value means, in the editor
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    whole: bool = False  # read as a whole number although the field holds a float
    items: ListKind | None = None  # a list of strings, of this kind
    folder: bool = False  # a folder: absolute, or from ~
    keeps_empty: bool = False  # "" is a value of its own, not "unset"


@dataclass(frozen=True, slots=True)
class Described:
    """One setting as the walk finds it."""

    key: str  # dotted, from the root: "compaction.hooks.timeout"
    attribute: str  # the field's name in its dataclass
    kind: Kind
    optional: bool  # null is a value (the field's type admits None)
    values: tuple[str, ...]
    default: Any
    spec: Setting

    @property
    def numeric(self) -> bool:
        return self.kind in NUMBER_KINDS


def setting(default: Any, description: str, **options: Any) -> Any:
    """A dataclass field that is a setting; `options` are `Setting`'s."""
    spec = Setting(description, **options)
    if isinstance(default, dict):  # a new one for each instance
        return field(default_factory=lambda: dict(default), metadata={SETTING: spec})
    return field(default=default, metadata={SETTING: spec})


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _sections(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Any]]:
    hints = get_type_hints(cls)
    for item in dataclasses.fields(cls):
        yield item, hints[item.name]


def described(cls: type, prefix: str = "", *, deep: bool = True) -> list[Described]:
    """Every setting of `cls` and (`deep`) of its sections, in declaration order."""
    out: list[Described] = []
    for item, hint in _sections(cls):
        if dataclasses.is_dataclass(hint):
            if deep:
                out += described(hint, f"{prefix}{camel(item.name)}.")  # type: ignore[arg-type]
            continue
        spec = item.metadata.get(SETTING)
        if spec is None:
            continue
        kind, values, optional = _kind(hint, spec)
        factory: Any = item.default_factory
        default = item.default if item.default is not dataclasses.MISSING else factory()
        out.append(
            Described(
                key=prefix + (spec.name or camel(item.name)), attribute=item.name, kind=kind,
                optional=optional, values=values, default=default, spec=spec,
            )
        )
    return out


def _kind(hint: Any, spec: Setting) -> tuple[Kind, tuple[str, ...], bool]:
    options = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    optional = type(None) in options
    (base,) = [option for option in options if option is not type(None)]
    if spec.items is not None:
        return spec.items, (), optional
    if base is bool:
        return "boolean", (), optional
    if base is int or spec.whole:
        return "integer", (), optional
    if base is float:
        return "number", (), optional
    if get_origin(base) is Literal:
        return "choice", tuple(get_args(base)), optional
    if base is str:
        if spec.values:
            return "choice", spec.values, optional
        return ("folder" if spec.folder else "string"), (), optional
    if get_origin(base) is Mapping or base is Mapping:
        return "object", (), optional
    raise TypeError(f"no setting kind for {hint!r}")


# --- reading --------------------------------------------------------------------------------


def read(cls: type, data: Any, base: Any, prefix: str = "") -> Any:
    """`base` (an instance of `cls`) with the settings `data` gives; a key not given, or
    null where null is not a value, keeps `base`'s. A bad value raises ConfigError naming
    the key and what it must be; the dataclass's own checks run on the result."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"setting '{prefix[:-1]}' must be an object" if prefix else "settings must be an object"
        )
    changes: dict[str, Any] = {}
    for item, hint in _sections(cls):
        if dataclasses.is_dataclass(hint):
            name = camel(item.name)
            if data.get(name) is not None:
                inner = getattr(base, item.name)
                changes[item.name] = read(hint, data[name], inner, f"{prefix}{name}.")  # type: ignore[arg-type]
            continue
        spec = item.metadata.get(SETTING)
        if spec is None:
            continue
        kind, values, optional = _kind(hint, spec)
        key = spec.name or camel(item.name)
        found, value = _lookup(data, key, prefix)
        if found:
            one = Described(prefix + key, item.name, kind, optional, values, None, spec)
            changes[item.name] = _value(one, value, getattr(base, item.name))
    return dataclasses.replace(base, **changes) if changes else base


def _lookup(data: Mapping[str, Any], key: str, prefix: str) -> tuple[bool, Any]:
    *path, last = key.split(".")
    for part in path:
        inner = data.get(part)
        if inner is None:
            return False, None
        if not isinstance(inner, Mapping):
            raise ConfigError(f"setting '{prefix}{part}' must be an object")
        data, prefix = inner, f"{prefix}{part}."
    return (last in data), data.get(last)


_EXPECTED: Mapping[str, str] = {
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "folder": "an absolute folder (or one starting with ~)",
    "names": "a list of variable names",
    "commands": "a list of shell commands",
    "paths": "a list of paths (absolute, or starting with ~)",
    "object": "an object",
}


def _value(one: Described, value: Any, current: Any) -> Any:
    """The value `value` gives the setting `one` (whose value until now is `current`)."""
    unset = value is None or (value == "" and one.kind in ("choice", "string", "folder"))
    if unset:
        if value == "" and one.spec.keeps_empty:
            return ""
        if one.optional and one.kind != "choice":
            return None
        return {} if one.kind == "object" else current
    if one.kind != "choice" and not _valid(one.kind, value):
        raise _bad(one, value, _EXPECTED[one.kind])
    _check_value(one, value)
    if one.kind == "choice":
        return value
    if one.numeric:
        return int(value) if one.kind == "integer" and not one.spec.whole else float(value)
    if one.kind in LIST_KINDS:
        return tuple(value)
    return dict(value) if one.kind == "object" else value


def _valid(kind: Kind, value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    strings = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    checks: Mapping[str, Any] = {
        "boolean": lambda: isinstance(value, bool),
        "integer": lambda: number and int(value) == value,
        "number": lambda: number,
        "string": lambda: isinstance(value, str),
        "folder": lambda: isinstance(value, str)
        and (value.startswith("~") or Path(value).is_absolute()),
        "names": lambda: strings,
        "commands": lambda: strings and all(v.strip() for v in value),
        "paths": lambda: strings and all(v.startswith(("/", "~")) for v in value),
        "object": lambda: isinstance(value, Mapping),
    }
    return bool(checks[kind]())


def _check_bounds(one: Described, value: float) -> None:
    spec = one.spec
    if spec.minimum is not None and value < spec.minimum:
        raise _bad(one, value, f"at least {spec.minimum:g}")
    if spec.exclusive_minimum is not None and value <= spec.exclusive_minimum:
        raise _bad(one, value, f"above {spec.exclusive_minimum:g}")
    if spec.maximum is not None and value > spec.maximum:
        raise _bad(one, value, f"at most {spec.maximum:g}")


def _bad(one: Described, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"setting '{one.key}' must be {expected}, not {value!r}")


def check(instance: Any) -> None:
    """ConfigError when one of `instance`'s own settings (not its sections') is out of its
    bounds or values: each settings dataclass's `__post_init__` calls it, so that settings
    made in code are held to what a settings file is."""
    cls: Any = type(instance)
    for one in _own(cls):
        value = getattr(instance, one.attribute)
        if value is None:
            continue
        try:
            _check_value(one, value)
        except ConfigError:  # said again with the key from the root
            _check_value(dataclasses.replace(one, key=_prefix(type(instance)) + one.key), value)
            raise


def _check_value(one: Described, value: Any) -> None:
    if one.kind == "choice" and value not in one.values:
        raise _bad(one, value, "one of " + ", ".join(one.values))
    if one.numeric:
        _check_bounds(one, value)


def root(cls: type) -> type:
    """Class decorator: `cls` is a whole settings section (its sections' keys are dotted from
    it), for the keys `check` names."""
    _ROOTS.append(cls)
    return cls


_ROOTS: list[type] = []


def _prefix(cls: type) -> str:
    """Where the section `cls` sits under a root: "compaction.hooks."; "" for a root."""

    def find(at: type, prefix: str) -> str | None:
        if at is cls:
            return prefix
        for item, hint in _sections(at):
            if dataclasses.is_dataclass(hint):
                found = find(hint, f"{prefix}{camel(item.name)}.")  # type: ignore[arg-type]
                if found is not None:
                    return found
        return None

    return next((p for r in _ROOTS if (p := find(r, "")) is not None), "")


@functools.cache
def _own(cls: Any) -> tuple[Described, ...]:
    return tuple(described(cls, deep=False))


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`, nested objects merged key by key; None leaves a key as it is."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_settings(out[key], value)
        elif value is not None:
            out[key] = value
    return out


def unknown_keys(cls: type, data: Mapping[str, Any]) -> list[str]:
    """The keys of `data` no setting of `cls` has (a typo: `compaction.thresold`), dotted."""
    tree: dict[str, Any] = {}
    for one in described(cls):
        node = tree
        *path, last = one.key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = None  # a leaf: its value is not looked into (mcp.servers)
    return _unknown(tree, data, "")


def _unknown(tree: Mapping[str, Any], data: Mapping[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    for key, value in data.items():
        if key not in tree:
            out.append(f"{prefix}{key}")
        elif isinstance(tree[key], Mapping) and isinstance(value, Mapping):
            out += _unknown(tree[key], value, f"{prefix}{key}.")
    return out
