"""What the client chooses of a session: its permission mode, its model and how hard the
model thinks (`session/set_mode`, `session/set_config_option`), and the config options that
offer them."""

from __future__ import annotations

from typing import Any

from agent_server.acp.acp_session import AcpSession
from agent_server.acp.outbox import UpdateQueue
from agent_server.acp.request_errors import invalid_params, request_error
from agent_server.acp.updates import config_options, mode_update
from agent_server.agent.model_setup import offered_models
from agent_server.agent.permissions import PERMISSION_MODES
from agent_server.errors import AgentServerError
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import can_think
from agent_server.llm.stream import THINKING_LEVELS, ThinkingLevel


async def set_option(
    state: AcpSession, outbox: UpdateQueue, config_id: str, value: str | bool
) -> list[Any]:
    """`session/set_config_option`: the mode, the model or the thinking level; the options
    as they are then."""
    if not isinstance(value, str):
        raise invalid_params(f"config option {config_id!r} takes one of its listed values")
    if config_id == "mode":
        set_mode(state, value)
        outbox.put(state.session.session_id, mode_update(state.session.gate.mode))
        await outbox.drain()
    elif config_id == "model":
        set_model(state, value)
    elif config_id == "thinking" and thinking_level(state) is not None:
        set_thinking(state, outbox, value)
    else:
        raise invalid_params(
            f"unknown config option {config_id!r}; use one of "
            f"{', '.join(str(o.id) for o in session_options(state))}"
        )
    return session_options(state)


def session_options(state: AcpSession) -> list[Any]:
    model = state.settings.model or state.session.model.id
    return list(
        config_options(
            state.session.gate.mode, model, session_models(state), thinking_level(state)
        )
    )


def set_mode(state: AcpSession, mode_id: str) -> None:
    if mode_id not in PERMISSION_MODES:
        raise invalid_params(
            f"unknown mode {mode_id!r}; use one of {', '.join(PERMISSION_MODES)}"
        )
    # At once, for the questions of a running turn: the session's one way to switch
    # (agent/session.py).
    mode = state.session.set_mode(mode_id)
    state.settings = state.settings.with_overrides(permissions_mode=mode)


def set_model(state: AcpSession, model_id: str) -> None:
    offered = [model.id for model in session_models(state)]
    if model_id not in offered:
        raise invalid_params(
            f"unknown model {model_id!r}; this provider offers: {', '.join(offered)}"
        )
    current = state.session.model
    if all(own.id != current.id for own in state.own_models):
        state.own_models.append(current)  # offered still, to switch back to
    state.settings = state.settings.with_overrides(model=model_id)
    state.session.update_settings(state.settings)


def session_models(state: AcpSession) -> list[ModelInfo]:
    """The models the picker offers and the setter takes (one list): the provider's,
    and before them every model the session ran that the catalogue does not list (the
    current one and those switched away from)."""
    models = offered_models(state.settings)
    listed = {info.id for info in models}
    ran = {own.id: own for own in (*state.own_models, state.session.model)}
    return [*(own for own in ran.values() if own.id not in listed), *models]


def thinking_level(state: AcpSession) -> ThinkingLevel | None:
    """The thinking level, when the chosen model thinks on request (else the option is
    not offered: no level would change what is asked of it)."""
    chosen = state.settings.model or state.session.model.id
    model = next((m for m in session_models(state) if m.id == chosen), state.session.model)
    return state.session.thinking if can_think(state.session.config.api, model) else None


def set_thinking(state: AcpSession, outbox: UpdateQueue, level: str) -> None:
    if level not in THINKING_LEVELS:
        raise invalid_params(
            f"unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}"
        )
    try:
        switch = state.session.switch_thinking(level)
    except AgentServerError as error:
        raise request_error(error) from None
    state.settings = state.settings.with_overrides(thinking=switch.thinking)
    # What the switch costs, as VS Code shows it; not while another model waits for the
    # next prompt (the note would be about the model being left).
    if switch.entry_id is not None and switch.note and state.session.can_think:
        outbox.put(state.session.session_id, state.translator.notice(switch.note))
