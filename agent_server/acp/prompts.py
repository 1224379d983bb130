"""`session/prompt` and `session/cancel`: a turn of the agent, or one of its slash commands
(`/compact`, `/usage`, `/tools`, `/remember`, `/forget`, `/pins`) answered in the session."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from acp.schema import PromptResponse

from agent_server.acp.acp_session import AcpSession
from agent_server.acp.outbox import UpdateQueue
from agent_server.acp.request_errors import invalid_params, request_error
from agent_server.acp.updates import (
    PromptBlock,
    PromptError,
    acp_stop_reason,
    agent_text,
    notice_text,
    own_message_id,
    pins_text,
    plan_update,
    prompt_content,
    prompt_title,
    slash_command,
    takes_argument,
    title_update,
    usage_text,
)
from agent_server.agent.memory import pin_argument
from agent_server.agent.session import AgentSession
from agent_server.errors import AgentServerError
from agent_server.llm.messages import usage_to_json
from agent_server.session.entries import TitleEntry


async def run_prompt(
    state: AcpSession, outbox: UpdateQueue, prompt: Sequence[PromptBlock]
) -> PromptResponse:
    """The prompt's turn (or its command), its updates out before the answer."""
    try:
        content = prompt_content(prompt)
    except PromptError as error:
        raise invalid_params(str(error)) from None
    command = slash_command(content)
    try:
        if command is not None:
            return await _command_prompt(state, outbox, *command)
        if not state.session.ledger.facts.title:
            title = prompt_title(prompt)
            if title:
                state.session.ledger.add(TitleEntry, title)
        _tell_mcp_wait(state, outbox)
        result = await state.session.run_turn(content)
    except AgentServerError as error:
        raise request_error(error) from None
    _send_title(state, outbox)
    await outbox.drain()
    if result.stop_reason == "error":
        raise request_error(
            TurnFailed(result.error or "the turn failed", result.error_code or "agent_error")
        )
    return PromptResponse(
        stop_reason=acp_stop_reason(result.stop_reason),
        field_meta={
            "agentServer": {"turnId": result.turn_id, "usage": usage_to_json(result.usage)}
        },
    )


def cancel_turn(state: AcpSession) -> None:
    """Stop the session's turn, or else the slash command it runs."""
    if not state.session.interrupt() and state.command is not None:
        state.command.cancel()  # a /compact: nothing of it is kept


class TurnFailed(AgentServerError):
    """A turn that ended with an error: its message, under the agent's own error code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


async def _command_prompt(
    state: AcpSession, outbox: UpdateQueue, name: str, argument: str
) -> PromptResponse:
    """A prompt that is a slash command: `end_turn` when it ran, `cancelled` when a
    `session/cancel` stopped it."""
    run = asyncio.ensure_future(_run_command(state, outbox, name, argument))
    state.command = run
    try:
        await asyncio.wait({run})
    finally:
        state.command = None
        run.cancel()  # when the prompt itself was cancelled; else done already
    await outbox.drain()
    if run.cancelled():
        return PromptResponse(stop_reason="cancelled")
    run.result()  # its error, if it failed
    return PromptResponse(stop_reason="end_turn")


def _tell_mcp_wait(state: AcpSession, outbox: UpdateQueue) -> None:
    """Before the first request, which waits for the MCP servers still starting (a few
    seconds at most: mcp.firstRequestWait): say so, not to wait silently."""
    status = state.session.tools.status()
    starting = [server.name for server in status.servers if server.state == "starting"]
    if starting and not status.tools_in_force:
        wait = min(state.settings.mcp.startup_timeout, state.settings.mcp.first_request_wait)
        outbox.put(
            state.session.session_id,
            state.translator.notice(
                f"Waiting for MCP server{'s' if len(starting) > 1 else ''} "
                f"{', '.join(starting)} to start (up to {wait:g} s; one that starts "
                "later is offered with its tools then)."
            ),
        )


async def _run_command(state: AcpSession, outbox: UpdateQueue, name: str, argument: str
                       ) -> None:
    session = state.session
    message_id = own_message_id(f"command-{name}")
    if argument and not takes_argument(name):  # "/usage why so high?": not dropped unsaid
        outbox.put(session.session_id, agent_text(
            f"/{name} takes nothing after it: nothing was done and nothing sent.", message_id
        ))
        return
    if name == "usage":
        outbox.put(
            session.session_id, agent_text(usage_text(session.usage.snapshot()), message_id)
        )
        return
    if name in ("remember", "forget", "pins"):
        _pins_command(session, outbox, name, argument)
        return
    if name == "tools":
        accepted = session.tools.accept()
        text = (
            f"The changed MCP tools are used from the next request (about "
            f"{accepted.tokens:,} tokens read again without the prompt cache)."
            if accepted.accepted
            else "The MCP tools have not changed: nothing to take in."
        )
        outbox.put(session.session_id, agent_text(text, message_id))
        return
    outcome = await session.compact(argument or None)
    if outcome.outcome == "noop":
        outbox.put(
            session.session_id,
            agent_text("Nothing to compact yet: the conversation is still short.", message_id),
        )


def _pins_command(session: AgentSession, outbox: UpdateQueue, name: str, argument: str
                  ) -> None:
    """`/remember [fact:] text`, `/forget id`, `/pins` (the plan too, as a plan update); a
    refusal is a notice saying why."""
    message_id = own_message_id(f"command-{name}")
    try:
        if name == "remember":
            pin = session.pin(*pin_argument(argument))
            answer = f"Pinned {pin.kind} {pin.id} (/forget {pin.id} removes it)."
        elif name == "forget":
            pin = session.unpin(argument.strip())
            answer = f"Removed {pin.kind} {pin.id}; it no longer holds."
        else:
            answer = pins_text(session.memory.pins())
    except AgentServerError as error:
        outbox.put(session.session_id, notice_text(error.message, message_id))
        return
    outbox.put(session.session_id, agent_text(answer, message_id))
    plan = session.memory.plan()
    if name == "pins" and plan:
        outbox.put(session.session_id, plan_update(plan))


def _send_title(state: AcpSession, outbox: UpdateQueue) -> None:
    title = state.session.ledger.facts.title
    if title and title != state.title:
        state.title = title
        outbox.put(state.session.session_id, title_update(title))
