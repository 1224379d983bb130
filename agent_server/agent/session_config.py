"""A session's configuration, in one object: the settings and the model choice in force.

The workspace's settings change under a session (the editor's configuration), and the user
makes choices for the one session (a model picked, a thinking level or a permission mode
switched to) that hold
until the setting itself changes. New settings wait for the next turn. `SessionConfig` keeps
all of that; the session changes it, and the context manager reads the models, the API and
the compaction settings from it on every use (it is the manager's `ContextConfig`), so
nothing is pushed anywhere when they change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent_server.agent.settings import AgentSettings
from agent_server.context.trigger import CompactionSettings
from agent_server.errors import AgentServerError
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import ANTHROPIC_MESSAGES
from agent_server.llm.stream import Provider, ThinkingLevel
from agent_server.protocol import PermissionMode


class ContextConfig(Protocol):
    """What the context manager reads of its session's configuration, each time it needs it:
    the session's model, the summaries' model, the compaction settings, and the provider's
    API (its cache lifetimes and billing)."""

    @property
    def model(self) -> ModelInfo: ...

    @property
    def summary_model(self) -> ModelInfo: ...

    @property
    def compaction(self) -> CompactionSettings: ...

    @property
    def api(self) -> str: ...


@dataclass(frozen=True, slots=True)
class FixedConfig:
    """A ContextConfig that never changes (a manager on its own: tests, benchmarks)."""

    model: ModelInfo
    summary_model: ModelInfo
    compaction: CompactionSettings
    api: str = ANTHROPIC_MESSAGES.name


@dataclass(frozen=True, slots=True)
class ModelSetup:
    """What a turn needs from the settings: the provider to call and the models to use."""

    provider: Provider
    model: ModelInfo
    summary_model: ModelInfo


class SessionConfig:
    """The settings and model setup in force for one session, the workspace's settings as
    last given, the session's own choices, and the settings waiting for the next turn."""

    def __init__(
        self,
        settings: AgentSettings,
        setup: ModelSetup,
        configured: AgentSettings | None = None,
    ) -> None:
        self.settings = settings  # in force
        self.setup = setup  # in force
        # The workspace's settings as last given; the session's own choices hold until the
        # setting itself changes.
        self._configured = configured or settings
        self._own_model = settings.model if settings.model != self._configured.model else None
        self._own_thinking: ThinkingLevel | None = (
            settings.thinking if settings.thinking != self._configured.thinking else None
        )
        self._own_mode: PermissionMode | None = None
        self._pending: AgentSettings | None = None

    # --- what the context manager reads ---------------------------------------------------

    @property
    def model(self) -> ModelInfo:
        return self.setup.model

    @property
    def summary_model(self) -> ModelInfo:
        return self.setup.summary_model

    @property
    def compaction(self) -> CompactionSettings:
        return self.settings.compaction

    @property
    def api(self) -> str:
        return self.setup.provider.api

    @property
    def own_mode(self) -> PermissionMode | None:
        """The permission mode the user switched this session to (None: the configured one)."""
        return self._own_mode

    @property
    def configured_mode(self) -> PermissionMode:
        """The permission mode the settings give."""
        return self._configured.permissions_mode

    # --- changes ------------------------------------------------------------------------

    def update(self, settings: AgentSettings) -> None:
        """The workspace's new settings, applied from the next turn (`take_pending`). A model
        picked for this session and a thinking level or mode switched to stay, unless that
        setting changed."""
        previous, self._configured = self._configured, settings
        if settings.model != previous.model or settings.provider != previous.provider:
            self._own_model = None
        if settings.thinking != previous.thinking:
            self._own_thinking = None
        if settings.permissions_mode != previous.permissions_mode:
            self._own_mode = None
        self._pending = self._with_own_choices(settings)

    def choose_mode(self, mode: PermissionMode) -> None:
        """The user switched this session's permission mode, at once."""
        self._own_mode = mode if mode != self._configured.permissions_mode else None
        self.settings = self.settings.with_overrides(permissions_mode=mode)
        self._keep_choices_pending()

    def choose_model(self, settings: AgentSettings, setup: ModelSetup) -> None:
        """The user switched this session to `settings.model`, set up as `setup`, at once."""
        self.settings, self.setup = settings, setup
        model = settings.model
        self._own_model = model if model != self._configured.model else None
        self._keep_choices_pending()

    def choose_thinking(self, level: ThinkingLevel) -> None:
        """The user switched this session's thinking level, from its next request."""
        self._own_thinking = level if level != self._configured.thinking else None
        self.settings = self.settings.with_overrides(thinking=level)
        self._keep_choices_pending()

    def connect(self, settings: AgentSettings,
                reconnect: Callable[[AgentSettings], ModelSetup]) -> None:
        """The connection of settings taken from `take_pending` put in force; when it cannot
        be (a model the provider does not serve), they are pending again (unless newer ones
        came meanwhile): each turn says why, until the settings are fixed."""
        try:
            self.setup = reconnect(settings)
        except AgentServerError:
            if self._pending is None:
                self._pending = settings
            raise

    def take_pending(self) -> AgentSettings | None:
        """The settings waiting for the next turn (None: nothing changed); they are the
        caller's to put in force."""
        pending, self._pending = self._pending, None
        return pending

    def _keep_choices_pending(self) -> None:
        if self._pending is not None:
            self._pending = self._with_own_choices(self._configured)

    def _with_own_choices(self, settings: AgentSettings) -> AgentSettings:
        return settings.with_overrides(
            model=self._own_model or settings.model,
            thinking=self._own_thinking or settings.thinking,
            permissions_mode=self._own_mode or settings.permissions_mode,
        )


def connection_changed(previous: AgentSettings, settings: AgentSettings) -> bool:
    """Whether going from `previous` to `settings` needs another provider or models."""
    return (
        settings.provider != previous.provider
        or settings.model != previous.model
        or settings.base_url != previous.base_url
        or settings.api_key_env != previous.api_key_env
        or settings.compaction.model != previous.compaction.model
    )
