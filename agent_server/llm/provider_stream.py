"""The run of one streamed provider call, shared by every provider module.

Opens the SDK stream (the SDK makes the request: auth, retries, errors), reads its body's
server-sent events itself (`server_sent_events`: the raw chunks split on blank lines, each
event's data one `json.loads`; what the SDK's own decoder, event objects and iterator layers
cost per event was most of a streamed answer's cost, issue 31), hands the JSON objects to the
provider's translator, passes the neutral events on, and
guarantees three things: the HTTP response is closed however the run ends (done, failed, or
cancelled by the consumer); every provider failure reaches the caller as a ProviderError;
and a stream that ends without the provider's end-of-message event is a dropped connection,
never a short answer. An answer whose reported prompt is larger than the model's window (a
server that took the prompt and cut it silently) is a ContextOverflowError, so that the
harness compacts and asks again.
"""

from __future__ import annotations

import json
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
)
from contextlib import aclosing
from typing import Any, Protocol

import jiter

from agent_server.llm.overflow import silent_overflow
from agent_server.llm.provider_errors import (
    ErrorContext,
    StreamInterrupted,
    is_provider_failure,
    silent_overflow_error,
    to_provider_error,
)
from agent_server.llm.stream import MessageAssembler, MessageDone, StreamEvent


class HttpResponse(Protocol):
    """What the stream's body is read through (httpx's response)."""

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...


class SdkStream(Protocol):
    """What both SDKs' AsyncStream offer: the response (its body not read yet), and close."""

    @property
    def response(self) -> Any: ...

    async def close(self) -> None: ...


EventDicts = AsyncIterator[Mapping[str, Any]]
Translator = Callable[[EventDicts, MessageAssembler], AsyncGenerator[StreamEvent, None]]
# The error a provider's stream reports in an event, as its SDK raises it (the event's name,
# its data decoded); None for an event that is not one.
ErrorEvent = Callable[[SdkStream, str | None, Any], BaseException | None]
# The events a provider's stream would have been for a whole answer sent as one JSON object
# (a server that ignored `stream: true`).
Unstreamed = Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]]


def as_one_event(body: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """A whole answer read as one event (Chat Completions: a completion is one chunk)."""
    return (body,)


async def run_provider_stream(
    open_stream: Callable[[], Awaitable[SdkStream]],
    translate: Translator,
    where: ErrorContext,
    end_event: str,
    context_window: int,
    assembler: MessageAssembler | None = None,
    *,
    error_event: ErrorEvent,
    unstreamed: Unstreamed = as_one_event,
) -> AsyncGenerator[StreamEvent, None]:
    """Neutral events of one call, ending with exactly one MessageDone.

    `translate` turns the event dicts into neutral events, feeding each to the assembler it
    is given (the caller's `assembler`, else a new one), and yields MessageDone when the
    provider's `end_event` arrives. `error_event` says which events are errors, and which;
    `unstreamed`, which events a whole answer sent as JSON stands for.
    """
    assembler = assembler if assembler is not None else MessageAssembler()
    done: MessageDone | None = None
    try:
        stream = await open_stream()
        try:
            dicts = _as_dicts(stream, error_event, unstreamed)
            async with aclosing(translate(dicts, assembler)) as events:
                async for event in events:
                    if isinstance(event, MessageDone):
                        done = event
                    else:
                        yield event
            if done is not None:
                await _drain(dicts)
        finally:
            # Normal end, failure, or the consumer's cancellation: release the connection.
            await stream.close()
        if done is None:
            raise StreamInterrupted(f"the response stream ended without {end_event}")
    except Exception as exc:
        if not is_provider_failure(exc):
            raise
        raise to_provider_error(exc, where) from exc
    if silent_overflow(done.message, context_window):
        raise silent_overflow_error(done.message, context_window, where)
    yield done


async def _drain(events: EventDicts) -> None:
    """Reads what follows the end event (the end of the body, `[DONE]`), so that the
    connection goes back to the pool instead of being closed half-read. The answer is
    complete already: a failure here changes nothing."""
    try:
        async for _ in events:
            pass
    except Exception as exc:
        if not is_provider_failure(exc):
            raise


async def _as_dicts(
    stream: SdkStream, error_event: ErrorEvent, unstreamed: Unstreamed
) -> EventDicts:
    """The stream's events as JSON objects, as the SDKs' own streams give them: a `ping` or
    an event without data is passed over, `[DONE]` ends the stream, an error event raises
    the SDK's error (`error_event`); an event whose data is not an object (no provider sends
    such) carries nothing the translators read, and is passed over. A JSON body instead of a
    stream is its error, if it is one, raised; else a server that ignored `stream: true` sent
    a whole answer, and it is the events its stream would have been (`unstreamed`: a chat
    completion one chunk, a Messages `message` or a Responses `response` the events of its
    stream), for the provider's own translator. (The SDKs' streams read no event in such a
    body: nothing is raised, nothing comes.)"""
    response = stream.response
    if "json" in str(response.headers.get("content-type", "")):
        # Not a stream: a server that answers a wrong path with 200 and an error object
        # (LM Studio) would otherwise look like a dropped connection, retried in vain.
        body = _decoded(await response.aread())
        error = error_event(stream, None, body)
        if error is not None:
            raise error
        if isinstance(body, dict):
            for streamed in unstreamed(body):
                yield streamed
        return
    events = server_sent_events(response.aiter_bytes())
    async for event, data in events:
        if event == "ping" or not data:
            continue
        if data.startswith(b"[DONE]"):
            async for _ in events:  # the rest of the body, so that the connection is reused
                pass
            return
        decoded = _decoded(data)
        error = error_event(stream, event, decoded)
        if error is not None:
            raise error
        if isinstance(decoded, dict):
            yield decoded


def _decoded(data: bytes) -> Any:
    """An event's data: its JSON (jiter, twice as fast on these small objects; what it
    refuses goes to `json.loads`, as the SDKs decode it), else its text."""
    try:
        return jiter.from_json(data)
    except ValueError:
        pass
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


async def server_sent_events(
    chunks: AsyncIterator[bytes],
) -> AsyncIterator[tuple[str | None, bytes]]:
    """The (event name, data) of each server-sent event of a body read in `chunks`, parsed
    as the SSE specification says (lines ended by CR, LF or CRLF; an event ended by a blank
    line; its `data` lines joined by LF; one space after the colon dropped; comments and the
    `id` and `retry` fields ignored; an unfinished event at the end dropped). Each chunk is
    split on blank lines in one go: the events a read brings come out together."""
    pending = b""
    async for chunk in chunks:
        pending = pending + chunk if pending else chunk
        if b"\r" in pending:
            # A CR at the end may be the first half of a CRLF: it waits for the next chunk.
            held = pending.endswith(b"\r")
            pending = _lf(pending[:-1] if held else pending) + (b"\r" if held else b"")
        if b"\n\n" in pending:
            *blocks, pending = pending.split(b"\n\n")
            for block in blocks:
                if event := _event(block):
                    yield event
    for block in _lf(pending).split(b"\n\n")[:-1]:  # a CR held at the very end ends a line
        if event := _event(block):
            yield event


def _lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _event(block: bytes) -> tuple[str | None, bytes] | None:
    """One event's name and data, from its lines; None when it has no data."""
    event: str | None = None
    data: list[bytes] = []
    for line in block.split(b"\n"):
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            event = value.decode("utf-8", "replace")
    return (event, b"\n".join(data)) if data else None
