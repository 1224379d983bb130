"""The session's cached prefix, as far as the context manager can tell: when a call last used
it and with which retention, whether the pause since outlived the provider's cache (the
prefix is cold: the next call writes it all again), and what that pause costs (the notice
the editor is shown). Whether a cold prefix is compacted is the decision's
(context.decision.decide, with `cold`)."""

from __future__ import annotations

from collections.abc import Callable

from agent_server.agent.context_view import ContextView
from agent_server.agent.session_config import ContextConfig
from agent_server.context.decision import went_cold
from agent_server.context.trigger import compacts_when_cold
from agent_server.llm.cache_ttl import describe_seconds
from agent_server.llm.cost import rewrite_cost
from agent_server.llm.messages import AssistantMessage
from agent_server.llm.providers import bills_cache_writes, cache_ttl
from agent_server.llm.stream import CacheRetention
from agent_server.session.entries import timestamp_seconds
from agent_server.session.ledger import Ledger


def last_cache_use(ledger: Ledger) -> tuple[float | None, CacheRetention]:
    """When the session's cache was last used (seconds on the session's clock, which stamps
    the ledger) and with what retention, by the latest model answer in the ledger that
    recorded them; (None, "short") when none did."""
    entry = ledger.facts.last_call
    at = timestamp_seconds(entry.timestamp) if entry is not None else None
    if entry is None or entry.cache_retention is None or at is None:
        return None, "short"
    return at, entry.cache_retention


class PrefixCache:
    """When the session's cache was last used, and whether the prefix of the call being
    prepared is cold (`cold`, set by the context manager while it prepares one). The model,
    the settings and the provider's API are read from `config` each time."""

    def __init__(self, ledger: Ledger, config: ContextConfig, clock: Callable[[], float]) -> None:
        self._config = config
        self._clock = clock
        # The last call that used the cache: from the ledger when the session is opened again
        # (unknown in a ledger that does not record it: never cold until the next call).
        self.last_call_at, self.last_retention = last_cache_use(ledger)
        self.cold = False  # the prefix of the call being prepared is cold

    def record_call(self, retention: CacheRetention | None = None) -> None:
        """A model call that read or wrote the session's cached prefix just ended, with that
        cache retention (None: the same as the last one)."""
        self.last_call_at = self._clock()
        if retention is not None:
            self.last_retention = retention

    def pause(self) -> float | None:
        """Seconds since the last call that used the session's cache; None before any."""
        return None if self.last_call_at is None else self._clock() - self.last_call_at

    def cold_pause(self) -> tuple[float, float] | None:
        """(pause, cache lifetime) when the pause since the last call outlived the cache the
        last call used (the next call writes the prefix again); else None."""
        pause = self.pause()
        ttl = cache_ttl(self._config.api, self._config.model, self.last_retention)
        if pause is None or ttl is None or not went_cold(pause, ttl):
            return None
        return pause, ttl

    def shared(self) -> bool:
        """Whether a summary asked for now may share the cached prefix: not when it is cold
        (before a call, or a manual compaction after a pause): writing it would cost more than
        the input price, and after the compaction no request begins with it."""
        return not self.cold and self.cold_pause() is None

    def cold_notice(self, view: ContextView, pause: float, ttl: float) -> str:
        """What the pause costs: the cached prefix written (or sent) again instead of read."""
        model, settings = self._config.model, self._config.compaction
        index = view.estimate.last_usage_index
        last = view.messages[index] if index is not None else None
        usage = last.usage if isinstance(last, AssistantMessage) else None
        tokens = usage.prompt_tokens if usage is not None else view.tokens
        dollars = rewrite_cost(
            model.pricing,
            tokens,
            bills_writes=bills_cache_writes(self._config.api, model),
            long=self.last_retention == "long",
        )
        message = (
            f"The prompt cache expired during the {describe_seconds(pause)} pause (the "
            f"provider keeps it {describe_seconds(ttl)}): the {tokens:,} tokens cached before "
            f"it are sent again, about ${dollars:.2f} more than reading them from the cache."
        )
        if compacts_when_cold(view.tokens, model, settings):
            share = settings.cold_cache_share
            message += (
                f" The history is past {share:.0%} of the compaction threshold, so it is "
                "compacted now: the rewrite costs the same either way, and what is written "
                "is smaller."
            )
        return message
