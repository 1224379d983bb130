"""Whether a JSON value is what agent_server/protocol.py describes: the LSP tests run every
result and notification the server sends through `mismatches`, so the description (and the
TypeScript generated from it) cannot drift from what the server does."""

from __future__ import annotations

import types
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

_NUMBERS = (int, float)


def mismatches(value: Any, annotation: Any, where: str = "$") -> list[str]:
    """What in `value` does not match `annotation` (a type of the protocol), as paths."""
    origin = get_origin(annotation)
    if annotation is Any:
        return []
    if isinstance(annotation, NewType):
        return mismatches(value, annotation.__supertype__, where)
    if origin in (NotRequired, Required):
        return mismatches(value, get_args(annotation)[0], where)
    if origin is Literal:
        allowed = get_args(annotation)
        return [] if value in allowed else [f"{where}: {value!r} is not one of {allowed}"]
    if origin in (Union, types.UnionType):
        options = get_args(annotation)
        if any(not mismatches(value, option, where) for option in options):
            return []
        return [f"{where}: {_short(value)} matches none of {_names(options)}"]
    if annotation is type(None):
        return [] if value is None else [f"{where}: {_short(value)} is not null"]
    if is_typeddict(annotation):
        return _typed_dict(value, annotation, where)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {_short(value)} is not a list"]
        (item,) = get_args(annotation)
        return [m for i, v in enumerate(value) for m in mismatches(v, item, f"{where}[{i}]")]
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{where}: {_short(value)} is not an object"]
    if annotation is float:
        ok = isinstance(value, _NUMBERS) and not isinstance(value, bool)
        return [] if ok else [f"{where}: {_short(value)} is not a number"]
    if annotation in (int, str, bool):
        ok = isinstance(value, annotation) and (annotation is bool or not isinstance(value, bool))
        return [] if ok else [f"{where}: {_short(value)} is not {annotation.__name__}"]
    raise TypeError(f"{where}: cannot check against {annotation!r}")


def _typed_dict(value: Any, cls: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {_short(value)} is not a {cls.__name__} object"]
    hints = get_type_hints(cls, vars(protocol), include_extras=True)
    out = [f"{where}.{key}: missing ({cls.__name__})" for key in cls.__required_keys__
           if key not in value]
    for key, item in value.items():
        if key not in hints:
            out.append(f"{where}.{key}: not described in {cls.__name__}")
        else:
            out += mismatches(item, hints[key], f"{where}.{key}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _names(options: tuple[Any, ...]) -> str:
    return ", ".join(getattr(o, "__name__", repr(o)) for o in options)


def check_result(method: str, result: Any) -> None:
    """Fails when the result of a client request is not what the protocol describes."""
    (described,) = [m for m in protocol.CLIENT_REQUESTS if m.name == method]
    found = mismatches(result, described.result, method)
    assert not found, "\n".join(found)


def check_notification(method: str, params: Any) -> None:
    described = [m for m in protocol.METHODS if m.name == method and m.sender == "server"]
    assert described, f"{method} is not described in agent_server/protocol.py"
    found = mismatches(params, described[0].params, method)
    assert not found, "\n".join(found)
