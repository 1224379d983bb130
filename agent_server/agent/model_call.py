"""One model call: stream the answer, retry what may succeed later.

The provider has classified every failure (llm/provider_errors.py); this loop only reads the
error's `retryable` flag. Rate limits, overloads, server errors and dropped streams are retried
with exponential backoff, or after the provider's retry-after in full (up to
MAX_RETRY_AFTER; a longer one gives up at once, saying when to try again); each wait is
announced so the user knows why nothing moves. A prompt that does not fit the window
(ContextOverflowError) is never retried here: the context manager recovers from it. Nor is
a request too large for the account's rate limit (RequestTooLargeError): the same request
would be refused again. Cancelling the caller (during a wait too) closes the HTTP stream (the
provider does that) and leaves what arrived in the attempt's assembler, the one the provider
assembles the answer in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent_server.errors import ProviderError
from agent_server.llm.cache_ttl import describe_seconds
from agent_server.llm.messages import AssistantMessage, Context
from agent_server.llm.models import ModelInfo
from agent_server.llm.stream import (
    CallOptions,
    MessageAssembler,
    MessageDone,
    Provider,
    StreamEvent,
)

log = logging.getLogger(__name__)


# The longest wait a provider's retry-after is honoured for: a wait asked for is waited in
# full (a shorter one is refused again, wasting the attempts), up to this; a longer one gives
# up at once, saying when to try again.
MAX_RETRY_AFTER = 300.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0  # the longest backoff when the provider asked for no wait
    max_retry_after: float = MAX_RETRY_AFTER
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # cancellable

    def delay(self, attempt: int, error: ProviderError) -> float:
        """Seconds to wait before retry number `attempt` (1-based): the provider's
        retry-after, else exponential backoff up to `max_delay`."""
        if error.retry_after is not None:
            return max(error.retry_after, 0.0)
        return float(min(self.base_delay * 2 ** (attempt - 1), self.max_delay))

    def waits_too_long(self, error: ProviderError) -> ProviderError | None:
        """The last word for a failure whose retry-after is longer than this policy waits;
        None when it may be waited for."""
        if error.retry_after is None or error.retry_after <= self.max_retry_after:
            return None
        return error.last_word(
            f"{error.provider or 'The provider'} asks to wait "
            f"{describe_seconds(error.retry_after)} before the next call, longer than "
            f"agent-server waits ({describe_seconds(self.max_retry_after)}): send the prompt "
            "again after that."
        )


@dataclass(slots=True)
class CallAttempt:
    """What the UI needs to know about the attempt in progress."""

    message_id: str
    assembler: MessageAssembler


async def call_model(
    provider: Provider,
    model: ModelInfo,
    context: Context,
    options: CallOptions,
    *,
    on_event: Callable[[CallAttempt, StreamEvent], None],
    on_retry: Callable[[ProviderError, float, int, CallAttempt], None],
    new_message_id: Callable[[], str],
    retry: RetryPolicy,
    attempt_holder: list[CallAttempt] | None = None,
) -> AssistantMessage:
    """Stream one answer. Raises ContextOverflowError, or ProviderError when retries run out
    (its message then says so, and what to do).

    `attempt_holder`, when given, always holds the current attempt as its only item, so a
    caller that is cancelled can recover the partial message from its assembler.
    `on_retry` gets the failed attempt: what it streamed is abandoned, the next attempt
    streams its answer from the start under a new message id.
    """
    retries = 0
    while True:
        attempt = CallAttempt(new_message_id(), MessageAssembler())
        if attempt_holder is not None:
            attempt_holder[:] = [attempt]
        try:
            async for event in provider.stream(model, context, options, attempt.assembler):
                if isinstance(event, MessageDone):
                    return event.message
                on_event(attempt, event)
            raise ProviderError("the stream ended without a final message", provider=provider.api)
        except ProviderError as error:
            # The provider classified the failure (llm/provider_errors.py): an overflow is a
            # ContextOverflowError already, and is not retryable.
            if not error.retryable:
                raise
            too_long = retry.waits_too_long(error)
            if too_long is not None:
                raise too_long from error
            if retries >= retry.max_retries:
                # The error said it would be retried; the last word says what to do instead.
                raise error.retries_used_up(retries + 1) from error
            retries += 1
            wait = retry.delay(retries, error)
            log.info("retrying model call in %.1fs after: %s", wait, error.message)
            on_retry(error, wait, retries, attempt)
            await retry.sleep(wait)
