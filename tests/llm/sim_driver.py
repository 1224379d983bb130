"""Driving a provider against the built-in simulator like the agent loop does."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import pytest

from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from agent_server.llm.models import ModelInfo
from agent_server.llm.stream import CallOptions, MessageDone, Provider, StreamEvent
from agent_server.sim.scenario import Scenario, parse_scenario
from tests.llm.builders import TOOLS, user

# Long enough (with the tools) to pass the simulator models' 1024-token cache minimum.
BIG_SYSTEM = (
    "You are a careful coding agent working in the user's repository. Read before you edit; "
    "run the tests after every change; explain what you did in one short paragraph. "
) * 40

SESSION = "session-7f3a"

SCENARIO: Scenario = parse_scenario(
    {
        "name": "provider-tests",
        "turns": [
            {
                "user": "Investigate the failing test",
                "steps": [
                    {
                        "text": "Running the tests.",
                        "tools": [
                            {"name": "bash", "arguments": {"command": "pytest -x", "timeout": 60}}
                        ],
                    },
                    {
                        "text": "Reading the modules the traceback names.",
                        "tools": [
                            {
                                "name": "read",
                                "arguments": {"path": f"src/module_{i}.py", "offset": i},
                            }
                            for i in range(15)
                        ],
                    },
                    {"text": "The failure comes from a stale fixture.", "textTokens": 120},
                ],
            },
            {
                "user": "Fix it",
                "steps": [
                    {
                        "text": "Editing.",
                        "tools": [
                            {
                                "name": "edit",
                                "arguments": {"path": "tests/conftest.py", "old": "a", "new": "b"},
                            }
                        ],
                    },
                    {"text": "Fixed; the tests pass."},
                ],
            },
        ],
    }
)


async def collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


async def call_model(
    provider: Provider, model: ModelInfo, messages: Sequence[Message], options: CallOptions
) -> AssistantMessage:
    events = await collect(
        provider.stream(model, Context(BIG_SYSTEM, TOOLS, tuple(messages)), options)
    )
    done = events[-1]
    assert isinstance(done, MessageDone)
    assert not any(isinstance(event, MessageDone) for event in events[:-1])
    return done.message


def default_output(call: ToolCall) -> str:
    if call.name == "bash":
        # A long test log: most of the conversation's tokens.
        return "".join(f"tests/test_{i}.py::test_case PASSED [{i}%]\n" for i in range(400))
    return f"# {call.arguments.get('path', '')}\nx = 1\n"


async def run_turn(
    provider: Provider,
    model: ModelInfo,
    history: list[Message],
    prompt: str,
    options: CallOptions,
    *,
    output: Callable[[ToolCall], str] = default_output,
    rewrite: Callable[[AssistantMessage], AssistantMessage] | None = None,
) -> list[AssistantMessage]:
    """One user turn: call the model until it stops asking for tools. Mutates `history`."""
    history.append(user(prompt))
    answers: list[AssistantMessage] = []
    for _ in range(10):
        answer = await call_model(provider, model, history, options)
        answers.append(answer)
        history.append(rewrite(answer) if rewrite is not None else answer)
        if answer.stop_reason != "toolUse":
            return answers
        for call in answer.tool_calls:
            history.append(ToolResultMessage(call.id, call.name, (TextContent(output(call)),)))
    raise AssertionError("the turn did not end")


def reversed_arguments(answer: AssistantMessage) -> AssistantMessage:
    """The same answer with every tool call's argument keys in reverse order."""

    def reverse(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: reverse(value[key]) for key in reversed(list(value))}
        return value

    content = tuple(
        ToolCall(block.id, block.name, reverse(dict(block.arguments)))
        if isinstance(block, ToolCall)
        else block
        for block in answer.content
    )
    return AssistantMessage(content, answer.stop_reason, answer.usage, answer.model, answer.api)


def body_json(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False)


def assert_prefix_grows(bodies: Sequence[Mapping[str, Any]], messages_key: str) -> None:
    """Each body begins where the one before it ended, in the provider's prefix order:
    everything but the message list is identical, and the message list's JSON is extended,
    never changed (the SDK orders top-level keys its own way, so bodies are compared by part).
    """
    for before, after in itertools.pairwise(bodies):
        assert {k: v for k, v in before.items() if k != messages_key} == {
            k: v for k, v in after.items() if k != messages_key
        }
        head = body_json(before[messages_key])
        assert head.endswith("]")
        assert body_json(after[messages_key]).startswith(head[:-1])


def models_built(monkeypatch: pytest.MonkeyPatch, base_client: ModuleType) -> list[object]:
    """The types an SDK's client (its `_base_client` module) builds response models of from
    now on: what `construct_type` is called with, as the SDK calls it."""
    built: list[object] = []
    construct = base_client.construct_type

    def counted(**kwargs: Any) -> object:
        built.append(kwargs.get("type_"))
        return construct(**kwargs)

    monkeypatch.setattr(base_client, "construct_type", counted)
    return built
