"""Whether a request asks for a summary, and whether a text is a summary handed over: read
from the words, the same way for every client.

The simulated model knows no client's markers. It reads what every summariser is asked in
plain words: an instruction to write a summary of the conversation, where the client puts
its instruction (after the last tool result of the last user message; in the system prompt
of a request that offers no tools, as a dedicated summariser call does). The wording of the
clients measured against it, from their sources:

- pi 0.73 (`core/compaction/compaction.js`): "Create a structured context checkpoint summary",
  "Update the existing structured summary", "Summarize the prefix" (a turn's prefix);
- Claude Code 2.1 (the request it sends): "Your task is to create a detailed summary of the
  conversation so far";
- Codex 0.171 (`codex-rs/core/templates/compact/prompt.md`): "You are performing a CONTEXT
  CHECKPOINT COMPACTION. Create a handoff summary";
- agent-server: "Summarise the conversation above/below", "Summarise the early part".

A summary handed over after a compaction opens with words that say so: pi's and
agent-server's "The conversation history before this point was compacted into the following
summary", Claude Code's "This session is being continued from a previous conversation that ran
out of context. The summary below covers ...", Codex's "Another language model started to
solve this problem and produced a summary ..."; or it opens with a `<summary>` tag.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agent_server.sim.transcript import Transcript, trailing_texts

SUMMARY_OPEN = "<summary>"
SUMMARY_CLOSE = "</summary>"

_INSTRUCTION = re.compile(
    r"\b(?:create|write|produce|provide|generate|update)\b[^.\n]{0,80}\bsummary\b"
    r"|\bsummari[sz]e\b[^.\n]{0,40}\b(?:conversation|session|context|history|messages|prefix"
    r"|early part)\b"
    r"|\bcontext checkpoint\b",
    re.IGNORECASE,
)
_SUMMARY_WORD = re.compile(r"\bsummar(?:y|ise|ize|ised|ized|isation|ization)\b", re.IGNORECASE)
_TURN_PREFIX = re.compile(
    r"\b(?:prefix|early part) of (?:a|the|this|the current) turn\b", re.IGNORECASE
)
# The opening of a handed-over summary: summary words, and words saying it replaces what came
# before.
_HANDOFF_SUMMARY = re.compile(r"\b(?:summar\w*|compacted)\b", re.IGNORECASE)
_HANDOFF_BEFORE = re.compile(
    r"\b(?:before this point|previous conversation|earlier (?:portion|part)|ran out of context"
    r"|another language model|continued from)\b",
    re.IGNORECASE,
)
_OPENING_CHARS = 300
# A client that carries part of the conversation verbatim after its summary may say so and ask
# for it not to be copied out (agent-server's summary_prompt._carried_note: "After the
# summary, agent-server carries verbatim the user's own messages and the tool calls that
# failed: refer to them briefly instead of copying them out", or "the user's 7 newest
# messages" when older ones are not carried).
_CARRIED = re.compile(
    r"\bcarries verbatim (?P<listed>[^:\n]+):\s*refer to them briefly", re.IGNORECASE
)
_USER_MESSAGES = re.compile(
    r"\bthe user's (?:own messages|(?P<newest>\d+) newest messages)\b", re.IGNORECASE
)
_FAILED_CALLS = re.compile(
    r"\bthe (?:tool calls that failed|(?P<newest>\d+) newest failed tool calls)\b",
    re.IGNORECASE,
)
EVERY = 1 << 30


class CarriedAfter(NamedTuple):
    """How many of the newest user messages and failed calls the instruction says are
    carried verbatim after the summary (EVERY: all of them; 0: none)."""

    user_messages: int = 0
    failed_calls: int = 0


def is_summary_instruction(text: str) -> bool:
    """Whether `text` asks for a summary of the conversation (or of part of it)."""
    return _INSTRUCTION.search(text) is not None


def asks_for_turn_prefix(text: str) -> bool:
    """Whether a summary instruction is about the early part of a turn only."""
    return _TURN_PREFIX.search(text) is not None


def is_summary_request(transcript: Transcript) -> bool:
    """Whether the request asks for a summary: its last user message ends with a summary
    instruction (after any tool results); or it offers no tools and its last user message or
    its system prompt speaks of a summary (a dedicated summariser call)."""
    last = transcript.messages[-1] if transcript.messages else None
    if last is None or last.role != "user":
        return False
    texts = [text for text in trailing_texts(last) if not is_summary_handoff(text)]
    if not texts:
        return False
    if any(is_summary_instruction(text) for text in texts):
        return True
    return not transcript.tools and bool(
        any(_SUMMARY_WORD.search(text) for text in texts) or _SUMMARY_WORD.search(transcript.system)
    )


def summary_instruction(transcript: Transcript) -> str:
    """The text of the last user message that asks for the summary (its last text when none
    says so in words: a summariser's system prompt asked)."""
    last = transcript.messages[-1]
    texts = trailing_texts(last)
    return next((text for text in reversed(texts) if is_summary_instruction(text)),
                texts[-1] if texts else "")


def is_summary_handoff(text: str) -> bool:
    """Whether `text` is a summary a client put in front of the conversation after a
    compaction: by its opening words, or it opens with a `<summary>` tag."""
    opening = text.lstrip()[:_OPENING_CHARS]
    if _HANDOFF_SUMMARY.search(opening) and _HANDOFF_BEFORE.search(opening):
        return True
    return opening.startswith(SUMMARY_OPEN) and SUMMARY_CLOSE in text


def handoff_body(text: str) -> str:
    """The summary inside a handed-over text: between `<summary>` tags when it has them, else
    what follows its opening sentence."""
    start = text.find(SUMMARY_OPEN)
    if start >= 0:
        end = text.find(SUMMARY_CLOSE, start)
        return text[start + len(SUMMARY_OPEN) : end if end >= 0 else len(text)].strip()
    stripped = text.strip()
    rest = stripped.partition("\n")[2]
    if rest.strip():
        return rest.strip()
    # One paragraph: what follows the colon that ends the opening words (Codex's).
    colon = stripped.find(":", 0, _OPENING_CHARS * 2)
    return stripped[colon + 1 :].strip() if colon >= 0 else stripped


def carried_after(instruction: str) -> CarriedAfter:
    """What the instruction says comes verbatim after the summary and should not be copied
    out: an instruction-following summariser refers to it instead (docs/simulator.md)."""
    said = _CARRIED.search(instruction)
    if said is None:
        return CarriedAfter()

    def count(pattern: re.Pattern[str]) -> int:
        found = pattern.search(said["listed"])
        if found is None:
            return 0
        return int(found["newest"]) if found["newest"] else EVERY

    return CarriedAfter(count(_USER_MESSAGES), count(_FAILED_CALLS))
