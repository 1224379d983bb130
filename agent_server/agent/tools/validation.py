"""Checks a tool call's arguments against the tool's JSON schema.

Only the subset of JSON Schema the tools use: an object of named properties with `type`
(string, integer, number, boolean, array, object), `minimum`, `maximum`, `enum` and
`required`. The message lists every problem, with what was expected, so the model can correct
itself in one step. Fields the schema does not name are passed on unchecked (an MCP server's
schema may allow them), unless it says `additionalProperties: false`, when they are dropped;
`null` for an optional field counts as absent (some models send it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_server.errors import InvalidToolArgumentsError
from agent_server.llm.messages import ToolSpec

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
}


def validate_arguments(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """The arguments, normalised (nulls dropped, 3.0 -> 3 for integers), or raise
    InvalidToolArgumentsError listing each missing or ill-typed field."""
    if not isinstance(arguments, Mapping):
        raise InvalidToolArgumentsError(
            f"Invalid arguments for {spec.name}: expected a JSON object of named arguments, "
            f"got {_describe(arguments)}. {_usage(spec)}"
        )
    properties: Mapping[str, Any] = spec.parameters.get("properties", {})
    required: list[str] = list(spec.parameters.get("required", []))
    keep_extra = spec.parameters.get("additionalProperties", True) is not False
    problems: list[str] = []
    normalised: dict[str, Any] = {}
    for name, value in arguments.items():
        if name not in properties:
            if keep_extra:
                normalised[name] = value
            continue
        if value is None:
            continue
        schema: Mapping[str, Any] = properties[name]
        checked, problem = _check(value, schema)
        if problem is not None:
            problems.append(f"- {name}: {problem}")
        else:
            normalised[name] = checked
    for name in required:
        if arguments.get(name) is None:
            schema = properties.get(name, {})
            expected = _TYPE_NAMES.get(str(schema.get("type")), "a value")
            description = schema.get("description")
            hint = f" ({description})" if description else ""
            problems.append(f"- {name}: missing; expected {expected}{hint}")
    if problems:
        raise InvalidToolArgumentsError(
            f"Invalid arguments for {spec.name}:\n" + "\n".join(problems) + f"\n{_usage(spec)}"
        )
    return normalised


def _check(value: Any, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    kind = schema.get("type")
    expected = _TYPE_NAMES.get(str(kind), "a value")
    if kind == "string":
        if not isinstance(value, str):
            return value, f"expected {expected}, got {_describe(value)}"
    elif kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return value, f"expected {expected}, got {_describe(value)}"
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value, f"expected {expected}, got {_describe(value)}"
    elif kind == "boolean":
        if not isinstance(value, bool):
            return value, f"expected {expected}, got {_describe(value)}"
    elif kind == "array":
        if not isinstance(value, list):
            return value, f"expected {expected}, got {_describe(value)}"
    elif kind == "object" and not isinstance(value, Mapping):
        return value, f"expected {expected}, got {_describe(value)}"
    minimum = schema.get("minimum")
    if minimum is not None and value < minimum:
        return value, f"expected {expected} >= {minimum}, got {_describe(value)}"
    maximum = schema.get("maximum")
    if maximum is not None and value > maximum:
        return value, f"expected {expected} <= {maximum}, got {_describe(value)}"
    choices = schema.get("enum")
    if choices is not None and value not in choices:
        allowed = ", ".join(json.dumps(c) for c in choices)
        return value, f"expected one of {allowed}, got {_describe(value)}"
    return value, None


def _describe(value: object) -> str:
    if value is None:
        return "null"
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}.get(
        type(value), "object" if isinstance(value, Mapping) else type(value).__name__
    )
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{kind} {shown}"


def _usage(spec: ToolSpec) -> str:
    properties: Mapping[str, Any] = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    fields = ", ".join(
        f"{name}{'' if name in required else '?'}: {schema.get('type', 'any')}"
        for name, schema in properties.items()
    )
    return f"Call {spec.name} again with {{{fields}}}."
