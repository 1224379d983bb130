"""JSON-RPC 2.0 as the LSP server, the ACP agent and the MCP client speak it: its error codes,
which ids an answer can carry back, and reading a message's id from the first bytes of its
body (a message refused unread: too large, not valid JSON).

LSP says an id is an integer or a string; JSON-RPC 2.0 allows any number (fractions "SHOULD
NOT" be used) and null. An answer carries the request's id when it is a string or a finite
number; otherwise (an object, an array, a boolean) null, as JSON-RPC asks for an id it
cannot read.
"""

from __future__ import annotations

import json
import math
from typing import TypeGuard

# JSON-RPC 2.0's own error codes (LSP's and ours are the protocols' own: lsp/transport.py,
# protocol.py's ERROR_CODES).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

ID_SCAN_BYTES = 4096  # how much of a message refused unread is searched for its id


def is_integer_or_string(value: object) -> TypeGuard[int | str]:
    """An id as LSP defines it."""
    return isinstance(value, int | str) and not isinstance(value, bool)


def answerable_id(value: object) -> int | str | float | None:
    """The id an answer carries back: the request's own when JSON-RPC can carry it (a string
    or a finite number, fractional ones included), else null."""
    if is_integer_or_string(value):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def find_request_id(head: bytes) -> int | str | float | None:
    """The `id` of a JSON-RPC message from the start of its body, when it can be read there
    (a top-level key whose value is a string or a number); else None."""
    text = head.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    try:
        i = skip(0)
        if text[i] != "{":
            return None
        i += 1
        while True:
            i = skip(i)
            key, i = decoder.raw_decode(text, i)
            i = skip(i)
            if not isinstance(key, str) or text[i] != ":":
                return None
            i = skip(i + 1)
            value, i = decoder.raw_decode(text, i)
            if key == "id":
                return answerable_id(value)
            i = skip(i)
            if text[i] != ",":
                return None
            i += 1
    except (ValueError, IndexError, RecursionError):
        return None
