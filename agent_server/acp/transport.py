"""Newline-delimited JSON on stdio, answering what the SDK's own transport drops or chokes on.

The SDK logs and skips a line that is not JSON, and a JSON value that is not an object (a
batch, a bare string) would stop its receive loop. Here the first gets a Parse error (-32700)
and the second an Invalid Request (-32600), both with `id: null`, as JSON-RPC 2.0 says (ACP
has no batches: the TypeScript SDK answers an array the same way); a request object without
a method name gets Invalid Request with its own id. Everything else is the SDK's: framing,
the size limit, and every well-formed message.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from acp._transport import NdjsonTransport  # the SDK's stdio transport, extended below

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def error_reply(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def problem_with(message: Any) -> dict[str, Any] | None:
    """The error reply for a decoded message the connection cannot route, or None."""
    if not isinstance(message, dict):
        kind = "an array (ACP has no batches)" if isinstance(message, list) else "not an object"
        return error_reply(None, INVALID_REQUEST, f"Invalid Request: the message is {kind}")
    is_request = "id" in message and "result" not in message and "error" not in message
    if is_request and not isinstance(message.get("method"), str):
        return error_reply(
            message.get("id"), INVALID_REQUEST, "Invalid Request: 'method' must be a string"
        )
    if "id" not in message and "method" in message and not isinstance(message["method"], str):
        return error_reply(None, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
    return None


class CheckedTransport(NdjsonTransport):
    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError as error:
                log.warning("not JSON on stdin: %s", error)
                await self.send(error_reply(None, PARSE_ERROR, f"Parse error: {error}"))
                continue
            reply = problem_with(message)
            if reply is not None:
                await self.send(reply)
                continue
            return dict(message)
