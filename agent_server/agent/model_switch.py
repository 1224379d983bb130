"""Going on with another model or thinking level, between turns: the ledger records the
change, the context stays as it is, and what the change costs at the next request is said
before it is paid (whoever made it: the user's switch, or a changed setting)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from agent_server.agent.context_manager import ContextManager
from agent_server.agent.events import EventSink, ModelChanged
from agent_server.agent.model_choice import (
    SwitchCost,
    switch_cost,
    switch_note,
    thinking_note,
    warm_prefix,
)
from agent_server.agent.permissions import PermissionGate
from agent_server.agent.session_config import ModelSetup, SessionConfig, connection_changed
from agent_server.agent.settings import AgentSettings
from agent_server.context.estimate import estimate_context_tokens
from agent_server.errors import ConfigError
from agent_server.llm.messages import Context
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import serves
from agent_server.llm.stream import CacheRetention, ThinkingLevel, parse_thinking
from agent_server.session.entries import ModelChangeEntry
from agent_server.session.ledger import Ledger


@dataclass(frozen=True, slots=True)
class ModelSwitch:
    """A model switch: the model now used, the entry that records it (None: no change),
    and what the switch costs at the next request (`note`: the same in words)."""

    model: ModelInfo
    entry_id: str | None
    cost: SwitchCost
    note: str


@dataclass(frozen=True, slots=True)
class ThinkingSwitch:
    """A change of the thinking level: the level now used, the entry that records it (None:
    no change), what it costs at the next request, and the same in words."""

    thinking: ThinkingLevel
    entry_id: str | None
    cost: SwitchCost
    note: str


@dataclass
class ModelSwitcher:
    """The session's switches of model and thinking level (the session says when: between
    turns), and the settings that wait for the next turn."""

    config: SessionConfig
    ledger: Ledger
    context: ContextManager
    gate: PermissionGate
    emit: EventSink
    retention: Callable[[], CacheRetention]  # the cache retention of the next call
    clock: Callable[[], float]
    current_turn: Callable[[], str | None]
    reconnect: Callable[[AgentSettings], ModelSetup] | None = None

    async def switch_model(self, model_id: str) -> ModelSwitch:
        """Continue with another model of the same provider."""
        if self.reconnect is None:
            raise ConfigError("this session cannot change its model")
        settings = self.config.settings.with_overrides(model=model_id)
        setup = self.reconnect(settings)
        if not serves(settings.provider, setup.model, settings.base_url):
            with contextlib.suppress(Exception):
                await setup.provider.aclose()
            raise ConfigError(
                f"{setup.model.name} ({setup.model.id}) is not served by the provider "
                f"{settings.provider!r}: pick one of its models, or change the provider "
                "setting (which starts new sessions with it)."
            )
        old = self.config.setup
        cost, note = self._switch_cost(old.model, setup, settings)
        self.config.choose_model(settings, setup)
        entry_id = None
        if setup.model.id != old.model.id or setup.provider.api != old.provider.api:
            entry_id = self.ledger.add(
                ModelChangeEntry,
                setup.provider.api, setup.model.id, settings.thinking
            ).id
            self.ledger.sync()
        with contextlib.suppress(Exception):
            await old.provider.aclose()
        return ModelSwitch(setup.model, entry_id, cost, note)

    def switch_thinking(self, level: str) -> ThinkingSwitch:
        """Think at another level from the next request (a level changed in the middle of a
        tool loop is refused by Anthropic's API, hence between turns)."""
        checked = parse_thinking(level)
        old = self.config.settings.thinking
        cost, note = self._thinking_cost(old, checked)
        entry_id = None
        if checked != old:
            self.config.choose_thinking(checked)
            entry_id = self.ledger.add(
                ModelChangeEntry,
                self.config.api, self.config.model.id, checked
            ).id
            self.ledger.sync()
        return ThinkingSwitch(checked, entry_id, cost, note)

    async def apply_pending(self) -> None:
        """Settings changed since the last turn take effect. A change of the model (a new
        provider or model setting) or of the thinking level is recorded and announced with
        what it costs (ModelChanged), as the user's own switch is (SessionConfig.connect)."""
        settings = self.config.take_pending()
        if settings is None:
            return
        previous, old = self.config.settings, self.config.setup
        if connection_changed(previous, settings) and self.reconnect is not None:
            self.config.connect(settings, self.reconnect)
        self.config.settings = settings
        self.gate.set_mode(settings.permissions_mode)
        new = self.config.setup
        if new.provider is not old.provider:
            with contextlib.suppress(Exception):
                await old.provider.aclose()
        if new.model.id != old.model.id or new.provider.api != old.provider.api:
            _cost, note = self._switch_cost(old.model, new, settings)
            self._announce("A settings change: " + note)
        elif settings.thinking != previous.thinking:
            _cost, note = self._thinking_cost(previous.thinking, settings.thinking)
            self._announce("A settings change: " + note)

    def _switch_cost(
        self, old: ModelInfo, new: ModelSetup, settings: AgentSettings
    ) -> tuple[SwitchCost, str]:
        """What going on with `new` instead of `old` costs at the next request (the part of
        the context `new`'s cache still holds is read, not written), and in words."""
        retention = self.retention()  # "auto" decided as the next call would
        view = self.context.view()
        cost = switch_cost(
            view.tokens,
            old,
            new.model,
            cache_retention=retention,
            settings=settings.compaction,
            warm=warm_prefix(view.entries, new.model, new.provider.api, self.clock()),
        )
        return cost, switch_note(old, new.model, cost, retention)

    def _thinking_cost(self, old: str, new: str) -> tuple[SwitchCost, str]:
        """What thinking at `new` instead of `old` costs at the next request: on Anthropic's
        API the messages (not the tools and system prompt) are read without the cache and
        written again."""
        view = self.context.view()
        prefix = estimate_context_tokens(
            Context(view.context.system_prompt, view.context.tools, ())
        ).tokens
        retention = self.retention()
        model = self.config.model
        cost = switch_cost(
            max(0, view.tokens - prefix),
            model,
            model,
            cache_retention=retention,
            settings=self.config.settings.compaction,
        )
        return cost, thinking_note(model, self.config.api, old, new, cost, retention)

    def _announce(self, note: str) -> None:
        """Record the model and thinking level now in force, and say what the change costs."""
        setup, thinking = self.config.setup, self.config.settings.thinking
        entry = self.ledger.add(ModelChangeEntry, setup.provider.api, setup.model.id, thinking)
        self.emit(
            ModelChanged(
                self.current_turn(), entry.id, setup.provider.api, setup.model, thinking, note
            )
        )
