"""Newline-delimited JSON on stdio, answering what the SDK's own transport drops or chokes on.

The SDK logs and skips a line that is not JSON, and a JSON value that is not an object (a
batch, a bare string) would stop its receive loop. Here the first gets a Parse error (-32700)
and the second an Invalid Request (-32600), both with `id: null`, as JSON-RPC 2.0 says (ACP
has no batches: the TypeScript SDK answers an array the same way); a request object without
a method name gets Invalid Request with its own id, and a request whose id is no JSON-RPC
id (an object, an array, a boolean) gets Invalid Request with a null id. The SDK's "Invalid
params" answer gets a message naming the fields its models refused, and a null list the
schema reads as empty (`mcpServers`, a server's `args`, `env`, `headers`) reaches them empty.

The SDK logs a traceback for every notification it cannot route or validate. Here an
unknown notification, or `session/cancel` without a string `sessionId`, is dropped with one
log line instead. Log lines about bad input drop to DEBUG after the first 50, so a flood
cannot fill the log. Everything else is the SDK's: framing, the size limit, and every
well-formed message.

Two stable ACP 1.7 messages the SDK (0.12.1) does not route are handled here:
`session/delete` goes to the agent's `ext_method` under its own name (the SDK's route for
`_`-methods), and `$/cancel_request` for a running `session/prompt` becomes that session's
`session/cancel` (the prompt then answers `cancelled`, as the protocol asks); for any other
request it is dropped, since every other request answers promptly. A `session/cancel` sent
as a request (an id, which some clients give it) cancels as the notification does and is
answered with an empty result.

And what the SDK's models drop of ACP 1.7: the raw `clientCapabilities.session` of
`initialize` (the SDK keeps `configOptions` only, not `notices` or `compaction`) is kept for
the agent, and `send_update` sends a `session/update` whose update the SDK has no model for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, get_args

from acp._transport import NdjsonTransport  # the SDK's stdio transport, extended below

from agent_server.ending_signals import EndingSignals
from agent_server.jsonrpc import (
    ID_SCAN_BYTES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    answerable_id,
    find_request_id,
)
from agent_server.protocol import McpTransport
from agent_server.stderr_log import shorten

log = logging.getLogger(__name__)

ANSWER_GRACE = 10.0  # seconds the requests under way have to answer, once the input ended
_LOUD = 50  # lines about bad input logged at WARNING before they drop to DEBUG
# The notifications an agent handles, with the string fields each needs.
AGENT_NOTIFICATIONS: dict[str, tuple[str, ...]] = {
    "session/cancel": ("sessionId",),
    "$/cancel_request": (),
}
UNROUTED_REQUESTS = frozenset({"session/delete"})  # stable methods the SDK does not route
MCP_TRANSPORTS: tuple[str, ...] = get_args(McpTransport)
# Requests with MCP servers: the schema reads a null `mcpServers` (and a server's `args`,
# `env`, `headers`) as empty (`x-deserialize-default-on-null`); the SDK's models refuse it.
MCP_SERVER_REQUESTS = frozenset({"session/new", "session/load", "session/resume"})
_SERVER_LISTS = ("args", "env", "headers")


def error_reply(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def named_invalid_params(error: Any) -> Any:
    """The SDK's answer to params its models refuse is "Invalid params", the reasons only in
    `data.errors` (pydantic's): an editor shows the message, so the message names them."""
    if not isinstance(error, dict) or error.get("message") != "Invalid params":
        return error
    data = error.get("data")
    reasons = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(reasons, list) or not reasons:
        return error
    named = [
        f"{'.'.join(str(part) for part in reason.get('loc', ()))}: {reason.get('msg', '')}"
        for reason in reasons[:3]
        if isinstance(reason, dict)
    ]
    more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
    # The data keeps where and what, not pydantic's echo of the input (a whole prompt) or its
    # documentation links.
    fields = [
        {"field": ".".join(str(part) for part in reason.get("loc", ())),
         "problem": str(reason.get("msg", ""))}
        for reason in reasons
        if isinstance(reason, dict)
    ]
    return {
        **error,
        "message": shorten(f"Invalid params: {'; '.join(named)}{more}", 500),
        "data": {"fields": fields},
    }


def with_empty_lists(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with a null `mcpServers`, or a null list of a server's, as empty lists."""
    servers = params.get("mcpServers")
    if "mcpServers" in params and servers is None:
        return {**params, "mcpServers": []}
    if not isinstance(servers, list):
        return params
    return {
        **params,
        "mcpServers": [
            {**server, **{k: [] for k in _SERVER_LISTS if k in server and server[k] is None}}
            if isinstance(server, dict)
            else server
            for server in servers
        ],
    }


def problem_with(message: Any) -> dict[str, Any] | None:
    """The error reply for a decoded message the connection cannot route, or None."""
    if not isinstance(message, dict):
        kind = "an array (ACP has no batches)" if isinstance(message, list) else "not an object"
        return error_reply(None, INVALID_REQUEST, f"Invalid Request: the message is {kind}")
    is_request = "id" in message and "result" not in message and "error" not in message
    if is_request and message["id"] is not None and answerable_id(message["id"]) is None:
        return error_reply(
            None, INVALID_REQUEST, "Invalid Request: 'id' must be a string, a number or null"
        )
    if is_request and not isinstance(message.get("method"), str):
        return error_reply(
            message.get("id"), INVALID_REQUEST, "Invalid Request: 'method' must be a string"
        )
    if "id" not in message and "method" in message and not isinstance(message["method"], str):
        return error_reply(None, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
    params = message.get("params")
    if is_request and message.get("method") in MCP_SERVER_REQUESTS and isinstance(params, dict):
        problem = malformed_server(params.get("mcpServers"))
        if problem is not None:
            return error_reply(message.get("id"), INVALID_PARAMS, f"Invalid params: {problem}")
    return None


def malformed_server(servers: Any) -> str | None:
    """What is wrong with the first MCP server the schema refuses (no command, no url), or
    None. The SDK's models drop such an entry without a word: the session would start
    without the server and nobody would know why."""
    if not isinstance(servers, list):
        return None  # the SDK's models say what is wrong with the list itself
    for index, server in enumerate(servers):
        where = f"mcpServers[{index}]"
        if not isinstance(server, dict):
            return f"{where}: an object is required"
        if not isinstance(server.get("name"), str):
            return f"{where}.name: a string is required"
        kind = server.get("type", "stdio")
        if kind not in MCP_TRANSPORTS:
            kind = shorten(str(kind), 40)
            return f"{where}.type: one of {', '.join(MCP_TRANSPORTS)} is required, not {kind}"
        needed = "command" if kind == "stdio" else "url"
        if not isinstance(server.get(needed), str) or not server[needed]:
            what = "the program to run" if kind == "stdio" else f"the {kind} server's URL"
            named = f"{where} ({shorten(server['name'], 60)})"
            return f"{named}.{needed}: a string is required ({what})"
    return None


def cancel_request(message: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """`session/cancel` sent as a request (with an id), which ACP defines as a notification
    and the SDK answers with Method not found: (the notification to route, or None when
    its params lack the session, and the answer to send, an empty result or the error)."""
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
        return None, error_reply(
            message["id"], INVALID_PARAMS, "Invalid params: sessionId: a string is required"
        )
    notification = {"jsonrpc": "2.0", "method": "session/cancel", "params": params}
    return notification, {"jsonrpc": "2.0", "id": message["id"], "result": {}}


def unroutable_notification(message: dict[str, Any]) -> str | None:
    """Why a notification cannot be handled (unknown, or its params lack a field), or None
    when it is not a notification or can be handled."""
    method = message.get("method")
    if "id" in message or not isinstance(method, str):
        return None
    fields = AGENT_NOTIFICATIONS.get(method)
    if fields is None:
        return f"ignored the unknown notification {shorten(method, 100)}"
    params = message.get("params")
    missing = [
        f for f in fields if not isinstance(params, dict) or not isinstance(params.get(f), str)
    ]
    if missing:
        return f"dropped {method}: params need the string field(s) {', '.join(missing)}"
    return None


class CheckedTransport(NdjsonTransport):
    _bad_input = 0
    _prompts: dict[Any, str] | None = None  # running session/prompt: request id -> session
    client_session: Any = None  # `clientCapabilities.session` of the last initialize, raw
    # The end of the input: a SIGHUP or SIGTERM ends the reading as the input's end does
    # (agent_server/ending_signals.py); `at_end` then closes the sessions, while the output
    # is still open, so that every request under way is answered (a prompt: cancelled)
    # before the SDK closes the connection.
    ending: EndingSignals | None = None
    at_end: Callable[[], Awaitable[None]] | None = None
    _unanswered: dict[str, Any] | None = None  # requests given to the SDK: JSON of id -> id
    _all_answered: asyncio.Event | None = None  # waited on once the input ended
    _given_up: frozenset[str] = frozenset()  # answered here at the end, not by the SDK
    _closed = False

    async def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        """A `session/update` notification with `update` as it is (a plain JSON object)."""
        await self.send({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        })

    def _running_prompts(self) -> dict[Any, str]:
        if self._prompts is None:
            self._prompts = {}
        return self._prompts

    def _routed(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The message as the SDK should see it, or None when it is handled here."""
        method = message.get("method")
        params = message.get("params")
        if method == "initialize" and isinstance(params, dict):
            capabilities = params.get("clientCapabilities")
            self.client_session = (
                capabilities.get("session") if isinstance(capabilities, dict) else None
            )
        if method == "session/prompt" and "id" in message and isinstance(params, dict):
            session_id = params.get("sessionId")
            if isinstance(session_id, str):
                self._running_prompts()[json.dumps(message["id"])] = session_id
        if method in MCP_SERVER_REQUESTS and isinstance(params, dict):
            message = {**message, "params": with_empty_lists(params)}
        if method in UNROUTED_REQUESTS and "id" in message:
            return {**message, "method": f"_{method}"}
        if method == "$/cancel_request":
            request_id = params.get("requestId") if isinstance(params, dict) else None
            session_id = self._running_prompts().get(json.dumps(request_id))
            if session_id is None:
                log.debug("nothing to cancel for request %s", shorten(str(request_id), 100))
                return None
            return {
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": {"sessionId": session_id},
            }
        return message

    def _requests_unanswered(self) -> dict[str, Any]:
        if self._unanswered is None:
            self._unanswered = {}
        return self._unanswered

    async def send(self, message: dict[str, Any]) -> None:
        if "id" in message and ("result" in message or "error" in message):
            key = json.dumps(message["id"])
            self._running_prompts().pop(key, None)
            unanswered = self._requests_unanswered()
            unanswered.pop(key, None)
            if not unanswered and self._all_answered is not None:
                self._all_answered.set()
            if key in self._given_up:
                log.debug("dropped a late answer to %s: answered at the end", shorten(key, 60))
                return
        if self._closed:
            # The SDK's sender has stopped: a send would wait for it forever.
            log.debug("not sent (the connection is closed): %s", shorten(str(message), 200))
            return
        if "error" in message and "method" not in message:
            message = {**message, "error": named_invalid_params(message["error"])}
        await super().send(message)

    def _log_bad_input(self, message: str) -> None:
        self._bad_input += 1
        level = logging.WARNING if self._bad_input <= _LOUD else logging.DEBUG
        if self._bad_input == _LOUD + 1:
            log.warning("more bad input follows; it is logged at DEBUG level")
        log.log(level, "%s", message)

    async def close(self) -> None:
        self._closed = True
        await super().close()

    async def _next_line(self) -> bytes:
        """The next line, or b"" at the input's end or when a signal ends the reading."""
        if self.ending is None:
            return await self._read_line()
        return await self.ending.stopping(self._read_line()) or b""

    async def _end_of_input(self) -> None:
        """Close the sessions, then wait (a while) for the answers of the requests under
        way; one still unanswered is answered here, with an error."""
        if self.at_end is not None:
            await self.at_end()
        unanswered = self._requests_unanswered()
        if unanswered:
            self._all_answered = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_answered.wait(), ANSWER_GRACE)
        if not unanswered:
            return
        # Answered here, past `send`, which drops the handlers' late answers from now on.
        self._given_up = frozenset(unanswered)
        for request_id in list(unanswered.values()):
            await super().send(
                error_reply(request_id, INTERNAL_ERROR, "the agent is closing: its input ended")
            )
        unanswered.clear()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._next_line()
            if not line:
                await self._end_of_input()
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except RecursionError:
                # Python's parser recurses per level: answer, as for any line not read.
                head = line if isinstance(line, bytes) else line.encode()
                self._log_bad_input("a line on stdin nests too deeply to be read")
                await self.send(
                    error_reply(
                        find_request_id(head[:ID_SCAN_BYTES]),
                        PARSE_ERROR,
                        "Parse error: the message nests too deeply to be read",
                    )
                )
                continue
            except ValueError as error:
                self._log_bad_input(f"not JSON on stdin: {error}")
                await self.send(error_reply(None, PARSE_ERROR, f"Parse error: {error}"))
                continue
            reply = problem_with(message)
            if reply is not None:
                self._log_bad_input(f"refused a message: {reply['error']['message']}")
                await self.send(reply)
                continue
            if message.get("method") == "session/cancel" and "id" in message:
                notification, answer = cancel_request(message)
                await self.send(answer)
                if notification is None:
                    continue
                message = notification
            dropped = unroutable_notification(message)
            if dropped is not None:
                self._log_bad_input(dropped)
                continue
            routed = self._routed(dict(message))
            if routed is not None:
                if "id" in routed and "method" in routed:
                    self._requests_unanswered()[json.dumps(routed["id"])] = routed["id"]
                return routed
