"""What the simulated model says next: a scenario step, the fallback, or a summary.

The choice is read from the request alone (stateless and deterministic, so retries and
compactions are safe):

1. The last user message carries SUMMARY_REQUEST_MARKER: an extractive summary (`summary.py`).
2. The last user message holds tool results: the first result whose id the simulator made
   (`toolu_sim_<turn>_<step>_<i>_<nonce>`, `call_sim_...`) gives turn and step; the answer is
   step + 1 of that turn.
3. Otherwise its last text block is a prompt: the scenario turn whose `user` text equals it
   (whitespace-normalised) answers with its first step. Failing that, a request for a summary
   in other words than ours (`is_summary_request`) gets the summary; failing that, the turn
   whose `user` text is contained in the message (a client that adds its own instructions
   around the user's words) answers.
4. Anything else gets the fallback: `ls .` if an `ls` tool is offered, then `read` of the first
   file that listing names, then a text answer that says what it saw and echoes the prompt
   (turn index `f` in the ids).

The nonce in an id (a digest of the whole conversation the request carries) keeps ids unique
within a conversation when the same turn runs twice, or after a failed turn left a partial answer
in the history: a later request always carries more, so its digest differs. It plays no part in
choosing the step.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_server.context.summary_prompt import SUMMARY_PREFIX, SUMMARY_REQUEST_MARKER
from agent_server.sim.scenario import Scenario, Step
from agent_server.sim.summary import summarise
from agent_server.sim.tokenizer import filler_text
from agent_server.sim.tool_fitting import fit_call, working_directory
from agent_server.sim.transcript import Transcript, TranscriptMessage, trailing_texts

FALLBACK_TURN = "f"
_CALL_ID = re.compile(
    r"^(?:toolu|call|fc)_sim_(?P<turn>\d+|f)_(?P<step>\d+)_(?P<index>\d+)(?:_[A-Za-z0-9]+)?$"
)
_ECHO_LIMIT = 400
_SUMMARY_INSTRUCTION = re.compile(
    r"\b(?:create|write|produce|provide|generate)\b[^.\n]{0,80}\bsummary\b"
    r"|\bsummari[sz]e\b[^.\n]{0,40}\b(?:conversation|session|context|history)\b"
    r"|context checkpoint",
    re.IGNORECASE,
)
_CODEX_HANDOFF = "Another language model started to solve this problem"
_SUMMARY_WORDING = re.compile(r"\bsummar(?:y|ise|ize|isation|ization)\b", re.IGNORECASE)


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


def conversation_digest(transcript: Transcript) -> str:
    """Eight hex digits that change whenever the conversation does."""
    return hashlib.sha256(repr(transcript.messages).encode("utf-8")).hexdigest()[:8]


def is_summary_handoff(text: str) -> bool:
    """A summary a client put in front of the conversation after compacting it (ours and pi's
    begin with SUMMARY_PREFIX, Codex's with its own words, Claude Code's holds <summary>)."""
    opening = text.lstrip()[:200]
    return opening.startswith((SUMMARY_PREFIX, _CODEX_HANDOFF)) or "<summary>" in text


def _has_marker(transcript: Transcript) -> bool:
    last = transcript.messages[-1] if transcript.messages else None
    return last is not None and last.role == "user" and any(
        SUMMARY_REQUEST_MARKER in text for text in last.texts
    )


def parse_call_id(call_id: str) -> tuple[str, int] | None:
    """(turn, step) encoded in an id the simulator made; turn is a number or "f"."""
    match = _CALL_ID.match(call_id)
    if match is None:
        return None
    return match["turn"], int(match["step"])


def is_summary_request(transcript: Transcript) -> bool:
    """Whether the request asks for a summary of the conversation, whoever sends it: our
    marker; or an instruction to write a summary of the conversation (Claude Code's "create a
    detailed summary of the conversation", Codex's "CONTEXT CHECKPOINT COMPACTION", pi's
    "structured context checkpoint summary"); or summary wording in a request that offers no
    tools (pi's summariser sends none)."""
    if _has_marker(transcript):
        return True
    last = transcript.messages[-1] if transcript.messages else None
    if last is None or last.role != "user":
        return False
    text = "\n".join(trailing_texts(last))
    if not text:
        return False
    if _SUMMARY_INSTRUCTION.search(text):
        return True
    return not transcript.tools and bool(
        _SUMMARY_WORDING.search(text) or _SUMMARY_WORDING.search(transcript.system)
    )


def plan_reply(transcript: Transcript, scenario: Scenario, *, id_prefix: str) -> PlannedReply:
    nonce = conversation_digest(transcript)
    if _has_marker(transcript):
        return PlannedReply(source="summary", text=summarise(transcript))
    last = transcript.messages[-1] if transcript.messages else None
    if last is None or last.role != "user":
        return _fallback(transcript, 2, id_prefix, nonce)
    # What was said after the last tool result (all of it when there are none): a new prompt
    # there wins over the results (pi sends the next prompt after an unfinished turn's results,
    # Codex its compaction prompt); text that matches nothing (Claude Code's reminders) does not.
    texts = trailing_texts(last)
    found = scenario.find_turn(texts[-1]) if texts else None
    if found is None and is_summary_request(transcript):
        return PlannedReply(source="summary", text=summarise(transcript))
    if found is None and texts:
        # Not inside a summary handed over after a compaction: it quotes earlier prompts.
        found = scenario.find_turn_within(
            "\n".join(text for text in texts if not is_summary_handoff(text))
        )
    if found is not None:
        return _scenario_step(transcript, scenario, found, 0, id_prefix, nonce)
    if last.tool_results:
        return _after_results(transcript, scenario, last, id_prefix, nonce)
    return _fallback(transcript, 0, id_prefix, nonce)


def _after_results(transcript: Transcript, scenario: Scenario, last: TranscriptMessage,
                   id_prefix: str, nonce: str) -> PlannedReply:
    """The step after the one whose calls these results answer."""
    for result in last.tool_results:
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
                return _scenario_step(transcript, scenario, turn_index, step + 1, id_prefix,
                                      nonce)
        break
    return _fallback(transcript, 2, id_prefix, nonce)


def _scenario_step(transcript: Transcript, scenario: Scenario, turn: int, index: int,
                   id_prefix: str, nonce: str) -> PlannedReply:
    """Step `index` of `turn`, its calls fitted to the request's tools (tool_fitting.py). A
    step none of whose calls fit any declared tool gives way to the turn's last step."""
    steps = scenario.turns[turn].steps
    step = steps[index]
    calls = _fitted_calls(transcript, step, turn, index, id_prefix, nonce)
    if step.tools and not calls:
        index = len(steps) - 1
        step = steps[index]
    text = step.text
    if step.text_tokens:
        filler = filler_text(step.text_tokens, seed=turn * 31 + index)
        text = f"{text}\n\n{filler}" if text else filler
    return PlannedReply(
        source=f"scenario:{turn}:{index}", thinking=step.thinking, text=text, calls=calls
    )


def _fitted_calls(transcript: Transcript, step: Step, turn: int, index: int, id_prefix: str,
                  nonce: str) -> tuple[PlannedCall, ...]:
    if not step.tools:
        return ()
    cwd = working_directory(transcript)
    calls: list[PlannedCall] = []
    for tool in step.tools:
        fitted = fit_call(tool.name, tool.arguments, transcript.tools, cwd)
        if fitted is not None:
            name, arguments = fitted
            call_id = make_call_id(id_prefix, turn, index, len(calls), nonce)
            calls.append(PlannedCall(id=call_id, name=name, arguments=arguments))
    return tuple(calls)


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
