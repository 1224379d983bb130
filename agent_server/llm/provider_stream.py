"""The run of one streamed provider call, shared by every provider module.

Opens the SDK stream (each provider asks its SDK for the events as plain JSON objects, not
typed models), hands them to the provider's translator, passes the neutral events on, and
guarantees three things: the HTTP response is closed however the run ends (done, failed, or
cancelled by the consumer); every provider failure reaches the caller as a ProviderError;
and a stream that ends without the provider's end-of-message event is a dropped connection,
never a short answer. An answer whose reported prompt is larger than the model's window (a
server that took the prompt and cut it silently) is a ContextOverflowError, so that the
harness compacts and asks again.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Any, Protocol

from agent_server.llm.overflow import silent_overflow
from agent_server.llm.provider_errors import (
    ErrorContext,
    StreamInterrupted,
    is_provider_failure,
    silent_overflow_error,
    to_provider_error,
)
from agent_server.llm.stream import MessageAssembler, MessageDone, StreamEvent


class SdkStream(Protocol):
    """What both SDKs' AsyncStream offer."""

    def __aiter__(self) -> AsyncIterator[Any]: ...

    async def close(self) -> None: ...


EventDicts = AsyncIterator[Mapping[str, Any]]
Translator = Callable[[EventDicts, MessageAssembler], AsyncGenerator[StreamEvent, None]]


async def run_provider_stream(
    open_stream: Callable[[], Awaitable[SdkStream]],
    translate: Translator,
    where: ErrorContext,
    end_event: str,
    context_window: int,
    assembler: MessageAssembler | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Neutral events of one call, ending with exactly one MessageDone.

    `translate` turns the event dicts into neutral events, feeding each to the assembler it
    is given (the caller's `assembler`, else a new one), and yields MessageDone when the
    provider's `end_event` arrives.
    """
    assembler = assembler if assembler is not None else MessageAssembler()
    done: MessageDone | None = None
    try:
        stream = await open_stream()
        try:
            dicts = _as_dicts(stream)
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


async def _as_dicts(stream: SdkStream) -> AsyncIterator[Mapping[str, Any]]:
    """The stream's JSON objects; an event that is not one (no provider sends such) carries
    nothing the translators read, and is passed over."""
    async for event in stream:
        if isinstance(event, Mapping):
            yield event
