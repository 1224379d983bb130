"""Histories for provider tests: a coding-agent conversation that only grows."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

SYSTEM = "You are a careful coding agent. Read before you edit. " * 40

TOOLS = (
    ToolSpec(
        "read",
        "Read a file of the workspace.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        "bash",
        "Run a shell command.",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    ),
    ToolSpec(
        "edit",
        "Replace text in a file.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old": {"type": "string"},
                "new": {"type": "string"},
            },
            "required": ["path", "old", "new"],
        },
    ),
)


def user(text: str) -> UserMessage:
    return UserMessage((TextContent(text),))


def assistant(
    *calls: ToolCall,
    text: str = "",
    api: str = "anthropic-messages",
    thinking: ThinkingContent | None = None,
    stop_reason: str | None = None,
) -> AssistantMessage:
    content: list[Any] = []
    if thinking is not None:
        content.append(thinking)
    if text:
        content.append(TextContent(text))
    content.extend(calls)
    reason = stop_reason or ("toolUse" if calls else "stop")
    return AssistantMessage(
        content=tuple(content),
        stop_reason=reason,  # type: ignore[arg-type]
        usage=Usage(input=10, output=5),
        model="sim-large",
        api=api,
    )


def call(call_id: str, name: str = "read", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments or {"path": f"src/{call_id}.py"})


def result(call_id: str, text: str | None = None, name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(call_id, name, (TextContent(text or f"contents of {call_id}\n" * 20),))


def context(messages: Sequence[Message], tools: Sequence[ToolSpec] = TOOLS) -> Context:
    return Context(system_prompt=SYSTEM, tools=tuple(tools), messages=tuple(messages))


def growing_conversation(
    steps: int = 6, parallel_at: int | None = None, parallel: int = 15
) -> list[list[Message]]:
    """The message lists of successive requests of one session: each adds the model's answer
    and the tool results (or a new user prompt); step `parallel_at` makes `parallel` calls."""
    history: list[Message] = [user("Fix the failing test in src/app.py")]
    requests = [list(history)]
    for step in range(1, steps + 1):
        if step == parallel_at:
            calls = [call(f"s{step}c{i}", "read", path=f"src/m{i}.py") for i in range(parallel)]
            history.append(assistant(*calls, text=f"Reading {parallel} modules."))
            history.extend(result(c.id) for c in calls)
        elif step % 3 == 0:
            history.append(assistant(text=f"Step {step} done."))
            history.append(user(f"Now do step {step + 1}."))
        else:
            c = call(f"s{step}", "bash", command=f"pytest -k test_{step}")
            history.append(assistant(c, text=f"Running test {step}."))
            history.append(result(c.id, f"output of step {step}\n" * 30, name="bash"))
        requests.append(list(history))
    return requests


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def cache_marks(params: Mapping[str, Any]) -> list[str]:
    """Where the cache_control marks are: 'tools[i]', 'system[i]', 'messages[i][j]'."""
    marks: list[str] = []
    for i, tool in enumerate(params.get("tools", [])):
        if "cache_control" in tool:
            marks.append(f"tools[{i}]")
    for i, block in enumerate(params.get("system", [])):
        if "cache_control" in block:
            marks.append(f"system[{i}]")
    for i, message in enumerate(params["messages"]):
        content = message["content"]
        if isinstance(content, list):
            for j, block in enumerate(content):
                if isinstance(block, Mapping) and "cache_control" in block:
                    marks.append(f"messages[{i}][{j}]")
                if isinstance(block, Mapping) and isinstance(block.get("content"), list):
                    for inner in block["content"]:
                        if "cache_control" in inner:
                            marks.append(f"messages[{i}][{j}].content")
    return marks


def cache_ttls(body: Any) -> list[str]:
    """The TTL of every cache_control mark in a request body, in the order the Anthropic API
    processes blocks (tools, system, messages; a body's keys are in that order)."""
    found: list[str] = []
    if isinstance(body, Mapping):
        control = body.get("cache_control")
        if isinstance(control, Mapping):
            found.append(str(control.get("ttl", "5m")))
        for key, value in body.items():
            if key != "cache_control":
                found.extend(cache_ttls(value))
    elif isinstance(body, list):
        for item in body:
            found.extend(cache_ttls(item))
    return found


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
