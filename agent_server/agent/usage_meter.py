"""The session's context meter: how full the context is, where it compacts, and what the
turn and the session have used and cost; the front ends are told it when it changes."""

from __future__ import annotations

from agent_server.agent.context_manager import ContextManager, ContextView
from agent_server.agent.events import EventSink, UsageSnapshot, UsageUpdated
from agent_server.agent.model_calls import ModelCalls
from agent_server.agent.session_config import SessionConfig
from agent_server.session.entries import MessageEntry
from agent_server.session.facts import usage_of


class UsageMeter:
    """The meter of one session, read from its context and its billed calls."""

    def __init__(
        self, context: ContextManager, calls: ModelCalls, config: SessionConfig, emit: EventSink
    ) -> None:
        self._context = context
        self._calls = calls
        self._config = config
        self._emit = emit
        self._said: UsageSnapshot | None = None  # the meter the front ends were told

    def snapshot(self, view: ContextView | None = None) -> UsageSnapshot:
        """The context meter for `view` (default: the ledger's context for the next call),
        with the turn's and the session's usage."""
        view = view or self._context.view()
        last_call = next(
            (
                usage
                for entry in reversed(view.entries)
                if isinstance(entry, MessageEntry) and (usage := usage_of(entry)) is not None
            ),
            None,
        )
        totals, turn = self._calls.totals, self._calls.turn_totals
        return UsageSnapshot(
            used=view.tokens,
            size=self._config.model.context_window,
            compact_at=self._context.compacts_above,
            window_number=self._context.window_number(view),
            last_call=last_call,
            cache_hit_rate=totals.cache_hit_rate,
            cost=totals.cost,
            calls=totals.calls,
            turn=turn.as_usage(),
            turn_calls=turn.calls,
            session=totals.as_usage(),
        )

    def tell(self, view: ContextView | None = None) -> None:
        """Tell the front ends the meter for `view`, unless they have it: a turn's end after
        the answer that ended it is the same meter again (each front end sent it twice)."""
        snapshot = self.snapshot(view)
        if snapshot != self._said:
            self._said = snapshot
            self._emit(UsageUpdated(snapshot))
