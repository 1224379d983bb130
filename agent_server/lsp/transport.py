"""The read side of the LSP connection: framing, JSON-RPC checks, and an answer to bad input.

pygls trusts what it reads: an enormous `Content-Length` is read (or allocated) whole, and a
message that fails to parse or convert is logged with a traceback and never answered. This
module replaces its read loop:

- `FrameReader` splits the byte stream into message bodies. A header block is at most
  MAX_HEADER_BYTES, a body at most MAX_MESSAGE_BYTES; a message over the cap, or a header
  that cannot be read, is refused and the reader resynchronises on the next
  `Content-Length: N<CR><LF>` (which cannot occur inside a JSON body: JSON strings hold no raw
  CR or LF), so the stream goes on and nothing waits for bytes that never come.
- `AgentProtocol.receive` answers every message that has an id: -32700 for a body that is
  not UTF-8 JSON, -32600 for an invalid request (a batch array, `jsonrpc` missing or not
  "2.0", a method that is not a string, a notification method sent with an id, a request
  after `shutdown`), -32002 before `initialize`, -32601 for an unknown method, -32602 for
  params the method's type refuses. An id that is a number but not an integer (`1.5`: JSON-RPC
  allows it, LSP does not) is refused with -32600 and answered with that id; an id that is no
  id at all (an object, an array, a boolean) gets an answer with a null id, as JSON-RPC asks.
  Notifications that cannot be handled are dropped with one log line; `$/cancelRequest` is
  handled here (an id of the wrong type, or of no request in flight, is dropped).
- `shutdown` counts from the moment it is read: an `exit` read while the shutdown handler
  still closes the folders (both in one write) waits for its answer, then exits with 0.
- Nothing from a client is logged or echoed whole: values are cut (`shorten`), and handled
  errors log no traceback. The first 50 refused or dropped messages are logged at WARNING,
  the rest at DEBUG, so a flood of bad input cannot fill the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import select
import threading
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any, BinaryIO

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)

from agent_server import protocol
from agent_server.jsonrpc import (
    ID_SCAN_BYTES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    answerable_id,
    find_request_id,
)
from agent_server.jsonrpc import is_integer_or_string as _is_id
from agent_server.stderr_log import shorten

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024
READ_CHUNK = 64 * 1024

SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800

# The methods that are notifications (the standard ones, and the editor protocol's from the
# client): sent with an id, they are invalid requests.
NOTIFICATION_METHODS = frozenset(
    method
    for method, message_types in types.METHOD_TO_TYPES.items()
    if message_types[0].__name__.endswith("Notification")
) | {method.name for method in protocol.CLIENT_NOTIFICATIONS}

_RESYNC = re.compile(rb"content-length:[ \t]*\d+\r\n", re.IGNORECASE)
_LOUD_REFUSALS = 50  # refusals logged at WARNING before they drop to DEBUG


# --- framing ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One message body, as sent."""

    body: bytes


@dataclass(frozen=True, slots=True)
class FramingError:
    """A message that could not be framed; `head` is the start of its body, if any arrived,
    to find the request's id in."""

    message: str
    head: bytes = b""


class FrameReader:
    """Splits a byte stream into LSP message bodies (`Content-Length` framing), without I/O.

    Memory is bounded by the larger of the two caps: a refused body is skipped as it
    arrives, never held.
    """

    def __init__(
        self, max_body: int = MAX_MESSAGE_BYTES, max_header: int = MAX_HEADER_BYTES
    ) -> None:
        self.max_body = max_body
        self.max_header = max_header
        self._buffer = bytearray()
        self._body_length: int | None = None  # reading a body of this length
        self._resyncing = False  # skipping to the next header

    @property
    def pending(self) -> int:
        """Bytes held that are not yet a whole message."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame | FramingError]:
        self._buffer += data
        out: list[Frame | FramingError] = []
        while True:
            if self._resyncing and not self._resync():
                return out
            if self._body_length is not None:
                if len(self._buffer) < self._body_length:
                    return out
                out.append(Frame(bytes(self._buffer[: self._body_length])))
                del self._buffer[: self._body_length]
                self._body_length = None
                continue
            item = self._header()
            if item is None:
                return out
            if isinstance(item, FramingError):
                out.append(item)

    def _resync(self) -> bool:
        """Skip to the next header; False when none has arrived yet."""
        found = _RESYNC.search(self._buffer)
        if found is None:
            keep = 64  # a header may be arriving split across reads
            if len(self._buffer) > keep:
                del self._buffer[:-keep]
            return False
        del self._buffer[: found.start()]
        self._resyncing = False
        return True

    def _header(self) -> FramingError | bool | None:
        """Reads one header block: True when a body is next, a FramingError when the header
        is refused, None when more bytes are needed."""
        start = 0
        while start < len(self._buffer) and self._buffer[start] in b"\r\n \t":
            start += 1  # stray line ends between messages
        if start:
            del self._buffer[:start]
        end = self._buffer.find(b"\r\n\r\n")
        if end == -1:
            if len(self._buffer) > self.max_header:
                self._resyncing = True
                return FramingError(
                    f"a message header longer than {self.max_header} bytes (or not an LSP "
                    "header at all): expected 'Content-Length: N' and a blank line"
                )
            return None
        block = bytes(self._buffer[:end])
        body_start = end + 4
        length, problem = _content_length(block)
        if problem is None and length is not None and length > self.max_body:
            problem = (
                f"a message of {length} bytes, larger than the {self.max_body // (1024 * 1024)}"
                " MB a message may have"
            )
        if problem is not None:
            head = bytes(self._buffer[body_start : body_start + ID_SCAN_BYTES])
            del self._buffer[:body_start]
            self._resyncing = True
            return FramingError(problem, head)
        del self._buffer[:body_start]
        self._body_length = length
        return True


def _content_length(block: bytes) -> tuple[int | None, str | None]:
    """The Content-Length of a header block, or a description of what is wrong with it."""
    length: int | None = None
    for raw in block.split(b"\r\n"):
        name, colon, value = raw.partition(b":")
        if not colon:
            shown = shorten(raw.decode("latin-1"), 80)
            return None, f"a header line without a colon: {shown!r}"
        if name.strip().lower() != b"content-length":
            continue  # Content-Type and anything else are not needed
        text = value.strip()
        if not text.isdigit() or len(text) > 20:
            shown = shorten(text.decode("latin-1"), 40)
            return None, f"Content-Length must be a number of bytes, not {shown!r}"
        if length is not None and int(text) != length:
            return None, "two different Content-Length headers"
        length = int(text)
    if length is None:
        return None, "a message header without Content-Length"
    return length, None


# --- the protocol: checks before pygls dispatches -----------------------------------------


class InvalidMessage(Exception):
    """A message pygls's types refuse; the text says which field and why."""


def describe_conversion_error(error: Exception) -> str:
    if isinstance(error, cattrs.BaseValidationError):
        problems = cattrs.transform_error(error)
        return shorten("; ".join(problems), 400)
    return shorten(f"{type(error).__name__}: {error}", 400)


class AgentProtocol(LanguageServerProtocol):
    """pygls's LSP protocol behind our own reading: every message is checked here first."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        # pygls sets `_shutdown` only once our (async) shutdown handler has finished; these
        # know of the shutdown from the moment it is read, so that nothing else starts and
        # an `exit` read behind it (in the same write) waits for its answer. (Set before
        # pygls's __init__, which reads every attribute looking for its features.)
        self.shutdown_id: int | str | None = None
        self.shutdown_answered = asyncio.Event()
        self._exit_waiting: Any = None
        super().__init__(server, converter)
        self.initialize_received = False
        self._refusals = 0

    # --- reading ------------------------------------------------------------------------

    def refuse_frame(self, error: FramingError) -> None:
        """Answer a message that could not be framed (its id, when its start shows it)."""
        self.refuse(find_request_id(error.head), INVALID_REQUEST, f"refused {error.message}")

    def receive(self, body: bytes) -> None:
        """Handle one message body, answering it when it is a request that cannot run."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.refuse(
                find_request_id(body[:ID_SCAN_BYTES]),
                PARSE_ERROR,
                f"the message is not valid UTF-8 (byte {exc.start})",
            )
            return
        try:
            data = json.loads(text)
        except RecursionError:
            self.refuse(
                find_request_id(body[:ID_SCAN_BYTES]),
                PARSE_ERROR,
                "the message nests too deeply to be read",
            )
            return
        except ValueError as exc:
            reason = (
                f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
                if isinstance(exc, json.JSONDecodeError)
                else "not JSON"
            )
            self.refuse(
                find_request_id(body[:ID_SCAN_BYTES]),
                PARSE_ERROR,
                f"the message is not valid JSON: {reason}",
            )
            return
        if isinstance(data, list):
            self._refuse_batch(data)
            return
        if not isinstance(data, dict):
            self.refuse(None, INVALID_REQUEST, "a message must be a JSON object")
            return
        self.receive_object(data)

    def _refuse_batch(self, batch: list[Any]) -> None:
        why = "batch messages (a JSON array) are not supported in LSP; send each message alone"
        ids = [
            answerable_id(m["id"])
            for m in batch
            if isinstance(m, dict) and answerable_id(m.get("id")) is not None
        ]
        for msg_id in dict.fromkeys(ids) or [None]:
            self.refuse(msg_id, INVALID_REQUEST, why)

    def receive_object(self, data: dict[str, Any]) -> None:
        has_id = "id" in data
        msg_id = data.get("id")
        answer_id = answerable_id(msg_id)
        method = data.get("method")
        if data.get("jsonrpc") != "2.0":
            self.refuse(
                answer_id,
                INVALID_REQUEST,
                'the message must say "jsonrpc": "2.0"',
                quiet=not has_id and "method" in data,
            )
            return
        if "method" not in data:
            if has_id and ("result" in data or "error" in data):
                self._response(data)
            else:
                self.refuse(
                    answer_id,
                    INVALID_REQUEST,
                    "a message needs a method (a request or a notification), or a result or "
                    "an error (a response)",
                )
            return
        if not isinstance(method, str):
            self.refuse(answer_id, INVALID_REQUEST, "method must be a string")
            return
        if has_id and not _is_id(msg_id):
            self.refuse(answer_id, INVALID_REQUEST, "id must be an integer or a string")
            return
        params = data.get("params")
        if params is not None and not isinstance(params, dict | list):
            if has_id:
                self.refuse(answer_id, INVALID_REQUEST, "params must be an object or an array")
            else:
                self.dropped("dropped %s: params must be an object or an array", shorten(method))
            return
        if _is_id(msg_id):
            self._request(msg_id, method, data)
        else:
            self._notification(method, data)

    def _request(self, msg_id: int | str, method: str, data: dict[str, Any]) -> None:
        if method == types.INITIALIZE and self.initialize_received:
            self.refuse(msg_id, INVALID_REQUEST, "initialize was already received")
            return
        if not self.initialize_received and method != types.INITIALIZE:
            self.refuse(
                msg_id,
                SERVER_NOT_INITIALIZED,
                f"the server is not initialized: send initialize before {shorten(method, 100)}",
            )
            return
        if self.shutting_down:
            self.refuse(
                msg_id,
                INVALID_REQUEST,
                f"the server is shutting down (shutdown was received): "
                f"{shorten(method, 100)} refused; only exit is accepted",
            )
            return
        if method in NOTIFICATION_METHODS:
            self.refuse(
                msg_id, INVALID_REQUEST, f"{method} is a notification: send it without an id"
            )
            return
        if not self._known(method):
            self.refuse(msg_id, METHOD_NOT_FOUND, f"unknown method {shorten(method, 100)!r}")
            return
        try:
            message = self._structure(data)
        except InvalidMessage as exc:
            self.refuse(msg_id, INVALID_PARAMS, f"{shorten(method, 100)}: {exc}")
            return
        if method == types.INITIALIZE:
            self.initialize_received = True
        if method == types.SHUTDOWN:
            self.shutdown_id = msg_id
        self._dispatch(message, msg_id)

    @property
    def shutting_down(self) -> bool:
        """A shutdown request was read (it may still be closing the folders)."""
        return self._shutdown or self.shutdown_id is not None

    def _notification(self, method: str, data: dict[str, Any]) -> None:
        if method != types.EXIT and (not self.initialize_received or self.shutting_down):
            when = "after shutdown" if self.shutting_down else "before initialize"
            log.debug("dropped the notification %s %s", shorten(method, 100), when)
            return
        if method == types.CANCEL_REQUEST:
            self._cancel(data.get("params"))
            return
        if not self._known(method):
            if not method.startswith("$/"):
                self.dropped("ignored the unknown notification %s", shorten(method, 100))
            return
        if method not in NOTIFICATION_METHODS and method != types.EXIT:
            self.dropped(
                "dropped %s: it is a request and was sent without an id", shorten(method, 100)
            )
            return
        try:
            message = self._structure(data)
        except InvalidMessage as exc:
            self.dropped("dropped the notification %s: %s", shorten(method, 100), exc)
            return
        if method == types.WINDOW_WORK_DONE_PROGRESS_CANCEL and not _is_id(message.params.token):
            # lsprotocol lets any value through as a token; pygls would fail hashing it
            self.dropped("dropped %s: params.token must be an integer or a string", method)
            return
        if method == types.EXIT and self.shutdown_id is not None:
            if not self.shutdown_answered.is_set():
                log.debug("exit waits for the answer to shutdown")
                self._exit_waiting = message
                return
            self._shutdown = True  # received, so exit's code is 0 (even if shutdown failed)
        self._dispatch(message, None)

    def _cancel(self, params: Any) -> None:
        """`$/cancelRequest`: cancel a request in flight. An id that no request can have (an
        object, a fraction) or that no request in flight has (it just finished) is dropped."""
        msg_id = params.get("id") if isinstance(params, dict) else None
        if not _is_id(msg_id):
            self.dropped("dropped $/cancelRequest: params.id must be an integer or a string")
            return
        future = self._request_futures.pop(msg_id, None)
        if future is None:
            log.debug("$/cancelRequest for %s, which is not in flight", shorten(str(msg_id), 60))
            return
        future.cancel()

    def _response(self, data: dict[str, Any]) -> None:
        msg_id = data.get("id")
        if not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            self.dropped("dropped a response with an invalid id")
            return
        if msg_id not in self._result_types:  # the ids of the requests the server sent
            self.dropped(
                "dropped a response to %s: the server sent no request with that id",
                shorten(str(msg_id), 60),
            )
            return
        try:
            message = self._structure(data)
        except InvalidMessage as exc:
            # The request it answers must still end: it fails with what was wrong.
            future = self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            if future is not None and not future.done():
                future.set_exception(
                    JsonRpcException(code=INVALID_PARAMS, message=f"malformed response: {exc}")
                )
            self.dropped("a malformed response to %s: %s", shorten(str(msg_id), 60), exc)
            return
        self._dispatch(message, None)

    def _dispatch(self, message: Any, msg_id: int | str | None) -> None:
        """pygls handles the message; a failure there is a bug, logged, and answered when
        the message is a request, and the connection goes on."""
        try:
            self.handle_message(message)
        except Exception as exc:
            log.error("handling a message failed: %s: %s", type(exc).__name__, exc, exc_info=exc)
            if msg_id is not None:
                self.refuse(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")
                if msg_id == self.shutdown_id:
                    self._shutdown_was_answered()

    def _run_generator(
        self,
        future: Future[Any] | None,
        *,
        gen: Generator[Any, Any, Any],
        result_future: Future[Any],
    ) -> None:
        """pygls's built-in handlers (initialize, shutdown, ...) call ours from a generator;
        when ours was cancelled (the server exits while it runs), pygls would raise the
        CancelledError in a callback, a traceback on stderr. The request is cancelled."""
        if future is not None and future.cancelled():
            gen.close()
            result_future.cancel()
            return
        super()._run_generator(future, gen=gen, result_future=result_future)

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """A late answer to a request the server has given up on (cancelled) is dropped;
        pygls would fail setting the result of a cancelled future."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            del self._request_futures[msg_id]
            log.debug("dropped the answer to %s: the request was cancelled", shorten(str(msg_id)))
            return
        super()._handle_response(msg_id, result, error)

    def _known(self, method: str) -> bool:
        return (
            method in self.fm.builtin_features
            or method in self.fm.features
            or method == types.CANCEL_REQUEST  # pygls handles it itself
        )

    def _structure(self, data: dict[str, Any]) -> Any:
        method = data.get("method")
        if isinstance(method, str):
            fallback = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            cls: Any = self.get_message_type(method) or fallback
        elif "error" in data:
            cls = types.ResponseErrorMessage
        else:
            cls = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
        try:
            return self._converter.structure(data, cls)
        except Exception as exc:
            raise InvalidMessage(describe_conversion_error(exc)) from None

    # --- answering ----------------------------------------------------------------------

    def refuse(
        self, msg_id: int | str | float | None, code: int, message: str, *, quiet: bool = False
    ) -> None:
        """Answer `msg_id` (null when unknown) with a JSON-RPC error, and log one line."""
        shown_id = shorten(json.dumps(msg_id), 60)
        self.dropped("refused message %s (%d): %s", shown_id, code, message, quiet=quiet)
        self._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        )

    def dropped(self, message: str, *args: Any, quiet: bool = False) -> None:
        """One log line for a message refused or dropped: at WARNING for the first ones, then
        at DEBUG (a flood of bad input must not fill the log)."""
        self._refusals += 1
        level = logging.DEBUG if quiet or self._refusals > _LOUD_REFUSALS else logging.WARNING
        if self._refusals == _LOUD_REFUSALS + 1:
            log.warning("more refused messages follow; they are logged at DEBUG level")
        log.log(level, message, *args)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        """pygls's version logs every error with a traceback and sends tracebacks to the
        client; errors the handlers raise on purpose (JSON-RPC errors) need neither."""
        self._request_futures.pop(msg_id, None)
        try:
            self._answer_handler_result(future, msg_id)
        finally:
            if msg_id == self.shutdown_id and self.shutdown_id is not None:
                self._shutdown_was_answered()

    def _shutdown_was_answered(self) -> None:
        """An `exit` that arrived while shutdown ran is carried out now, in a callback of its
        own (its SystemExit must not unwind pygls's handling of the shutdown)."""
        exit_message, self._exit_waiting = self._exit_waiting, None
        if exit_message is not None:
            self._shutdown = True
            asyncio.get_running_loop().call_soon(self._dispatch, exit_message, None)
        self.shutdown_answered.set()  # after: the exit runs before those waiting for this

    def _answer_handler_result(self, future: Future[Any], msg_id: Any) -> None:
        if future.cancelled():
            self._send_response(
                msg_id,
                error=types.ResponseError(
                    code=REQUEST_CANCELLED, message=f"request {msg_id!r} was cancelled"
                ),
            )
            return
        error = future.exception()
        if error is None:
            self._send_response(msg_id, result=future.result())
            return
        if isinstance(error, JsonRpcException):
            log.debug("request %s: error %d: %s", shorten(str(msg_id), 60), error.code, error)
            response = types.ResponseError(
                code=error.code, message=shorten(error.message, 2000), data=error.data
            )
        else:
            log.error(
                "request %s failed: %s: %s",
                shorten(str(msg_id), 60),
                type(error).__name__,
                error,
                exc_info=error,
            )
            response = types.ResponseError(
                code=INTERNAL_ERROR,
                message=shorten(f"internal error: {type(error).__name__}: {error}", 500),
            )
        self._send_response(msg_id, error=response)


def keep_raw(obj: dict[str, Any], cls: type) -> Any:
    """Structure a generic JSON-RPC message keeping params and results as plain JSON; a
    missing field (a request without params) is None."""
    return cls(**{field.name: obj.get(field.name) for field in attrs.fields(cls)})


# --- the read loops -----------------------------------------------------------------------


async def read_loop(
    protocol: AgentProtocol, read: Callable[[], Awaitable[bytes]], stop: threading.Event
) -> None:
    """Feed what `read` returns (b"" at the end) through the framing into `protocol`."""
    frames = FrameReader()
    while not stop.is_set():
        data = await read()
        if not data:
            break
        for item in frames.feed(data):
            if isinstance(item, FramingError):
                protocol.refuse_frame(item)
            else:
                protocol.receive(item.body)
    if frames.pending:
        log.warning("the input ended inside a message (%d bytes unread)", frames.pending)


def stdin_reader(stdin: BinaryIO) -> Callable[[], Awaitable[bytes]]:
    """Reads of `stdin` in a daemon thread (so that a blocked read never holds up exit),
    at most a few chunks ahead of the protocol."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)
    fd = stdin.fileno()

    def pump() -> None:
        while True:
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:  # stdin shares a non-blocking description with stdout
                select.select([fd], [], [])
                continue
            except OSError:
                data = b""
            try:
                asyncio.run_coroutine_threadsafe(queue.put(data), loop).result()
            except (RuntimeError, CancelledError, asyncio.CancelledError):
                return  # the loop is gone or going
            if not data:
                return

    threading.Thread(target=pump, name="lsp-stdin", daemon=True).start()
    return queue.get


def stream_reader(reader: asyncio.StreamReader) -> Callable[[], Awaitable[bytes]]:
    async def read() -> bytes:
        with contextlib.suppress(ConnectionError):
            return await reader.read(READ_CHUNK)
        return b""

    return read
