"""What the simulated model says next: a scenario step, the fallback, or a summary.

The choice is read from the request alone (stateless and deterministic, so retries and
compactions are safe):

1. The last user message carries SUMMARY_REQUEST_MARKER: an extractive summary (`summary.py`).
2. The last user message holds tool results: the first result whose id the simulator made
   (`toolu_sim_<turn>_<step>_<i>_<nonce>`, `call_sim_...`) gives turn and step; the answer is
   step + 1 of that turn.
3. Otherwise its last text block is a prompt: the scenario turn whose `user` text equals it
   (whitespace-normalised) answers with its first step.
4. Anything else gets the fallback: `ls .` if an `ls` tool is offered, then `read` of the first
   file that listing names, then a text answer that says what it saw and echoes the prompt
   (turn index `f` in the ids).

The nonce in an id (the number of messages in the request) keeps ids unique within a
conversation when the same turn runs twice; it plays no part in choosing the step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_server.context.summary_prompt import SUMMARY_REQUEST_MARKER
from agent_server.sim.scenario import Scenario, Step
from agent_server.sim.summary import summarise
from agent_server.sim.tokenizer import filler_text
from agent_server.sim.transcript import Transcript, TranscriptMessage

FALLBACK_TURN = "f"
_CALL_ID = re.compile(
    r"^(?:toolu|call|fc)_sim_(?P<turn>\d+|f)_(?P<step>\d+)_(?P<index>\d+)(?:_[A-Za-z0-9]+)?$"
)
_ECHO_LIMIT = 400


@dataclass(frozen=True, slots=True)
class PlannedCall:
    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedReply:
    """The full answer before any cut-off: thinking, then text, then tool calls."""

    source: str  # "scenario:<turn>:<step>", "fallback:<step>" or "summary"
    thinking: str = ""
    text: str = ""
    calls: tuple[PlannedCall, ...] = ()


def make_call_id(prefix: str, turn: int | str, step: int, index: int, nonce: str) -> str:
    return f"{prefix}_sim_{turn}_{step}_{index}_{nonce}"


def parse_call_id(call_id: str) -> tuple[str, int] | None:
    """(turn, step) encoded in an id the simulator made; turn is a number or "f"."""
    match = _CALL_ID.match(call_id)
    if match is None:
        return None
    return match["turn"], int(match["step"])


def is_summary_request(transcript: Transcript) -> bool:
    last = transcript.messages[-1] if transcript.messages else None
    return last is not None and last.role == "user" and any(
        SUMMARY_REQUEST_MARKER in text for text in last.texts
    )


def plan_reply(transcript: Transcript, scenario: Scenario, *, id_prefix: str) -> PlannedReply:
    nonce = str(len(transcript.messages))
    if is_summary_request(transcript):
        return PlannedReply(source="summary", text=summarise(transcript))
    last = transcript.messages[-1] if transcript.messages else None
    if last is None or last.role != "user":
        return _fallback(transcript, 2, id_prefix, nonce)
    results = last.tool_results
    if results:
        for result in results:
            parsed = parse_call_id(result.tool_call_id)
            if parsed is None:
                continue
            turn, step = parsed
            if turn == FALLBACK_TURN:
                return _fallback(transcript, step + 1, id_prefix, nonce)
            turn_index = int(turn)
            if turn_index < len(scenario.turns):
                steps = scenario.turns[turn_index].steps
                if step + 1 < len(steps):
                    return _scenario_step(turn_index, step + 1, steps[step + 1], id_prefix, nonce)
            break
        return _fallback(transcript, 2, id_prefix, nonce)
    texts = [text for text in last.texts if text.strip()]
    if texts:
        found = scenario.find_turn(texts[-1])
        if found is not None:
            return _scenario_step(found, 0, scenario.turns[found].steps[0], id_prefix, nonce)
    return _fallback(transcript, 0, id_prefix, nonce)


def _scenario_step(turn: int, index: int, step: Step, id_prefix: str, nonce: str) -> PlannedReply:
    text = step.text
    if step.text_tokens:
        filler = filler_text(step.text_tokens, seed=turn * 31 + index)
        text = f"{text}\n\n{filler}" if text else filler
    calls = tuple(
        PlannedCall(
            id=make_call_id(id_prefix, turn, index, i, nonce),
            name=tool.name,
            arguments=tool.arguments,
        )
        for i, tool in enumerate(step.tools)
    )
    return PlannedReply(
        source=f"scenario:{turn}:{index}", thinking=step.thinking, text=text, calls=calls
    )


# --- the fallback ---------------------------------------------------------------------------


def _fallback(transcript: Transcript, step: int, id_prefix: str, nonce: str) -> PlannedReply:
    tools = set(transcript.tool_names)
    seen = _fallback_results(transcript)
    if step == 0 and "ls" in tools:
        call = PlannedCall(make_call_id(id_prefix, FALLBACK_TURN, 0, 0, nonce), "ls", {"path": "."})
        return PlannedReply(source="fallback:0", text="Let me look at the workspace first.",
                            calls=(call,))
    if step <= 1 and "read" in tools:
        listing = seen.get("ls")
        target = _first_file(listing) if listing is not None else None
        if target is not None:
            call = PlannedCall(
                make_call_id(id_prefix, FALLBACK_TURN, 1, 0, nonce), "read", {"path": target}
            )
            return PlannedReply(source="fallback:1", text=f"Now `{target}`.", calls=(call,))
    return PlannedReply(source="fallback:2", text=_fallback_answer(transcript, seen))


def _fallback_results(transcript: Transcript) -> dict[str, str]:
    """Tool name -> result text, for the fallback calls made since the latest prompt."""
    out: dict[str, str] = {}
    for message in _since_latest_prompt(transcript.messages):
        for result in message.tool_results:
            parsed = parse_call_id(result.tool_call_id)
            if parsed is None or parsed[0] != FALLBACK_TURN:
                continue
            call = transcript.tool_call(result.tool_call_id)
            if call is not None:
                out[call.name] = result.text
    return out


def _since_latest_prompt(messages: tuple[TranscriptMessage, ...]) -> tuple[TranscriptMessage, ...]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not message.tool_results and message.texts:
            return messages[index + 1 :]
    return messages


def _first_file(listing: str) -> str | None:
    fallback: str | None = None
    for line in listing.splitlines():
        words = line.strip().lstrip("-*").split()
        if not words:
            continue
        name = words[-1] if len(words) > 1 and "." in words[-1] else words[0]
        if name.endswith("/") or name in (".", ".."):
            continue
        if "." in name.strip("."):
            return name
        fallback = fallback or name
    return fallback


def _entries(listing: str) -> list[str]:
    return [line.strip() for line in listing.splitlines() if line.strip()]


def _fallback_answer(transcript: Transcript, seen: dict[str, str]) -> str:
    prompt = " ".join(transcript.latest_prompt().split())
    if len(prompt) > _ECHO_LIMIT:
        prompt = prompt[:_ECHO_LIMIT] + "…"
    parts: list[str] = []
    listing = seen.get("ls")
    if listing is not None:
        entries = _entries(listing)
        shown = ", ".join(entries[:8]) + (", …" if len(entries) > 8 else "")
        parts.append(
            f"I had a look at the workspace: `ls .` lists {len(entries)} entries ({shown})."
        )
    content = seen.get("read")
    if content is not None:
        first = next((line.strip() for line in content.splitlines() if line.strip()), "")
        target = _first_file(listing) if listing is not None else None
        name = f"`{target}`" if target else "The file I read"
        parts.append(f"{name} begins with: \"{first[:200]}\".")
    if prompt:
        parts.append(f"You asked: \"{prompt}\".")
    parts.append(
        "This prompt is not part of the simulator's scenario, so this is its generic answer; "
        "nothing else needs doing."
    )
    return " ".join(parts)
