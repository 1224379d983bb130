"""Reading request fields with type checks; the API modules word the problems their own way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

FieldPath: TypeAlias = tuple[str | int, ...]
Expected: TypeAlias = Literal["string", "integer", "number", "boolean", "list", "object"]


class FieldProblem(Exception):
    """A field is missing or has the wrong type."""

    def __init__(self, path: FieldPath, kind: Literal["missing", "type"], expected: Expected,
                 got: object = None) -> None:
        super().__init__(f"{dotted(path)}: {kind}")
        self.path = path
        self.kind = kind
        self.expected = expected
        self.got = got


def matches(value: object, expected: Expected) -> bool:
    if expected == "string":
        return isinstance(value, str)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "list":
        return isinstance(value, list)
    return isinstance(value, dict)


def get_field(
    obj: Mapping[str, Any], key: str, path: FieldPath, expected: Expected, *, required: bool = False
) -> Any:
    """obj[key] if present (and not null) with the expected type; None when absent."""
    value = obj.get(key)
    where = (*path, key)
    if value is None:
        if required:
            raise FieldProblem(where, "missing", expected)
        return None
    if not matches(value, expected):
        raise FieldProblem(where, "type", expected, value)
    return value


def dotted(path: FieldPath) -> str:
    """Anthropic's form: messages.0.content.1."""
    return ".".join(str(part) for part in path)


def bracketed(path: FieldPath) -> str:
    """OpenAI's form: messages[0].content."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def json_type_name(value: object) -> str:
    """How OpenAI names a JSON value's type in its errors ("a string", "an object")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
