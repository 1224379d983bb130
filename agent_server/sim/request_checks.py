"""Checks that a run's logged requests keep the harness's promises (DESIGN.md invariants 1, 2, 5).

Given the simulator's request records (or its JSONL log), `check_requests` verifies, for every
Anthropic Messages request:

- well-formed history: roles alternate starting with a user message; every tool_result answers
  a tool_use of the immediately preceding assistant message and every tool_use is answered in
  the next message (no orphan, ever);
- cache breakpoints: on the last tool, at the end of the system prompt and on the last block of
  the last user message; at most four, and a fourth only on the last block of an earlier user
  message;
- the append-only prefix: between two compactions, each request begins with the previous one
  byte for byte (tools, system and messages, `cache_control` marks aside, since they move).

A compaction is recognised by its summary request (read from its words, as the simulated
model reads it: `summary_requests.is_summary_request`); the request after it starts a new cache
window. Requests the server
rejected as too long are checked like the others; a retry repeats its predecessor, which the
prefix rule accepts.
Reusable by tests and benchmarks: it reads only the log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.sim.records import RequestRecord
from agent_server.sim.summary_requests import is_summary_request as asks_for_summary
from agent_server.sim.transcript import (
    Part,
    TextPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    TranscriptMessage,
)


@dataclass
class RequestCheck:
    requests: int = 0  # model requests checked (summary requests included)
    summary_requests: int = 0
    windows: int = 0  # cache windows: runs of requests between compactions
    prefix_checks: int = 0  # consecutive pairs whose prefix was compared
    violations: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def cache_read_share(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def summary(self) -> str:
        head = (
            f"{self.requests} requests ({self.summary_requests} summaries), {self.windows} cache "
            f"windows, {self.prefix_checks} prefix checks, cache-read share "
            f"{self.cache_read_share:.1%}"
        )
        if self.ok:
            return head + ": all invariants hold"
        return (
            head + f": {len(self.violations)} violations:\n  " + "\n  ".join(self.violations[:20])
        )


def load_log(path: Path) -> list[dict[str, Any]]:
    """The JSONL request log written by `agent-server sim --log`."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            records.append(json.loads(line))
    return records


def _as_dict(record: RequestRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(record, RequestRecord):
        return record.to_json()
    return record


def is_summary_request(body: Mapping[str, Any]) -> bool:
    """Whether an Anthropic Messages body asks for a summary (by its words)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    if _role(last) != "user":
        return False
    parts: list[Part] = []
    for block in _blocks(last):
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            parts.append(TextPart(str(block.get("text", ""))))
        elif block.get("type") == "tool_result":
            parts.append(ToolResultPart(str(block.get("tool_use_id", "")), ""))
    system = body.get("system")
    system_text = system if isinstance(system, str) else "\n".join(
        str(block.get("text", "")) for block in system or () if isinstance(block, Mapping)
    )
    tools = tuple(ToolSpec(str(tool.get("name", "")), {}) for tool in body.get("tools") or ()
                  if isinstance(tool, Mapping))
    transcript = Transcript(system_text, tools, (TranscriptMessage("user", tuple(parts)),))
    return asks_for_summary(transcript)


def check_requests(
    records: Iterable[RequestRecord | Mapping[str, Any]], *, breakpoints: bool = True
) -> RequestCheck:
    result = RequestCheck()
    previous: Mapping[str, Any] | None = None
    for raw in records:
        record = _as_dict(raw)
        if record.get("api") != "anthropic-messages":
            continue
        body = record.get("request")
        if not isinstance(body, Mapping):
            continue
        result.requests += 1
        where = f"request #{record.get('index') or result.requests}"
        tokens = record.get("tokens") or {}
        result.prompt_tokens += int(tokens.get("prompt", 0))
        result.cache_read_tokens += int(tokens.get("cacheRead", 0))
        status = int(record.get("status", 200))
        error = str(record.get("error") or "")
        if status == 400 and "prompt is too long" not in error:
            result.violations.append(f"{where}: rejected as invalid: {error}")
        result.violations.extend(f"{where}: {problem}" for problem in history_problems(body))
        if is_summary_request(body):
            result.summary_requests += 1
            previous = None
            continue
        if breakpoints:
            result.violations.extend(f"{where}: {problem}" for problem in breakpoint_problems(body))
        if previous is None:
            result.windows += 1
        else:
            result.prefix_checks += 1
            problem = prefix_problem(previous, body)
            if problem:
                result.violations.append(f"{where}: {problem}")
        previous = body
    return result


def history_problems(body: Mapping[str, Any]) -> list[str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["no messages"]
    problems: list[str] = []
    if _role(messages[0]) != "user":
        problems.append("the first message is not a user message")
    for index in range(1, len(messages)):
        if _role(messages[index]) == _role(messages[index - 1]):
            problems.append(f"messages {index - 1} and {index} are both {_role(messages[index])}")
    for index, message in enumerate(messages):
        results = _ids(message, "tool_result", "tool_use_id")
        if results:
            calls = _ids(messages[index - 1], "tool_use", "id") if index > 0 else []
            orphans = [r for r in results if r not in calls]
            if orphans:
                problems.append(f"message {index}: tool results without a call: {orphans}")
        calls = _ids(message, "tool_use", "id")
        if calls:
            answered = (
                _ids(messages[index + 1], "tool_result", "tool_use_id")
                if index + 1 < len(messages)
                else []
            )
            unanswered = [c for c in calls if c not in answered]
            if unanswered:
                problems.append(f"message {index}: tool calls without a result: {unanswered}")
    return problems


def breakpoint_problems(body: Mapping[str, Any]) -> list[str]:
    marks = list(_cache_marks(body))
    problems: list[str] = []
    if len(marks) > 4:
        problems.append(f"{len(marks)} cache breakpoints (at most 4)")
    tools = body.get("tools") or []
    if tools and not _marked(tools[-1]):
        problems.append("the last tool has no cache breakpoint")
    if any(_marked(tool) for tool in tools[:-1]):
        problems.append("a tool other than the last has a cache breakpoint")
    system = body.get("system")
    if isinstance(system, list) and system:
        if not _marked(system[-1]):
            problems.append("the system prompt's last block has no cache breakpoint")
        if any(_marked(block) for block in system[:-1]):
            problems.append("a system block other than the last has a cache breakpoint")
    messages = body.get("messages") or []
    users = [i for i, m in enumerate(messages) if _role(m) == "user"]
    if users:
        last_user = messages[users[-1]]
        if not _marked(_blocks(last_user)[-1] if _blocks(last_user) else {}):
            problems.append("the last user message's last block has no cache breakpoint")
    message_marks = []
    for index, message in enumerate(messages):
        blocks = _blocks(message)
        for position, block in enumerate(blocks):
            if _marked(block):
                message_marks.append(index)
                if _role(message) != "user" or position != len(blocks) - 1:
                    problems.append(
                        f"message {index} block {position}: a breakpoint off the last block of "
                        "a user message"
                    )
    if len(message_marks) > 2:
        problems.append(f"{len(message_marks)} breakpoints in messages (at most 2)")
    return problems


def prefix_problem(previous: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Why `current` does not begin with `previous` (cache marks aside), or None. The prefix is
    one of content blocks, as the provider caches it: the previous request's last message may
    go on with more blocks (a summary instruction after the previous request)."""
    for key in ("tools", "system", "tool_choice", "model"):
        if _canonical(previous.get(key)) != _canonical(current.get(key)):
            return f"'{key}' changed between requests of one cache window"
    before = previous.get("messages") or []
    after = current.get("messages") or []
    if len(after) < len(before):
        return f"the history shrank from {len(before)} to {len(after)} messages"
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if _canonical(old) == _canonical(new):
            continue
        if index == len(before) - 1 and _goes_on(old, new):
            continue
        return f"message {index} differs from the previous request's"
    return None


def _goes_on(old: Any, new: Any) -> bool:
    """Whether message `new` is message `old` with more blocks after its own."""
    old_blocks, new_blocks = _blocks(old), _blocks(new)
    return (
        _role(old) == _role(new)
        and len(new_blocks) > len(old_blocks)
        and _canonical(old_blocks) == _canonical(new_blocks[: len(old_blocks)])
    )


def _role(message: Any) -> str:
    return str(message.get("role")) if isinstance(message, Mapping) else "?"


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def _ids(message: Any, kind: str, key: str) -> list[str]:
    return [
        str(block.get(key))
        for block in _blocks(message)
        if isinstance(block, Mapping) and block.get("type") == kind
    ]


def _marked(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("cache_control") is not None


def _cache_marks(body: Mapping[str, Any]) -> Iterable[Any]:
    for tool in body.get("tools") or []:
        if _marked(tool):
            yield tool
    system = body.get("system")
    if isinstance(system, list):
        yield from (block for block in system if _marked(block))
    for message in body.get("messages") or []:
        yield from (block for block in _blocks(message) if _marked(block))


def _strip_marks(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_marks(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    """Bytes as sent (key order kept), cache marks removed."""
    return json.dumps(_strip_marks(value), ensure_ascii=False, separators=(",", ":"))

