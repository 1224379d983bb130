"""When to compact: the threshold, the settings and the rules that the decision before each
model call combines (context/decision.py, `decide`): invariant 4 of DESIGN.md.

Compact when the estimate exceeds `context_window - reserve`; the reserve (room for the
model's answer and this turn's additions) defaults to the model's max output + 4096, clamped
to [8k, 20k]. With the cached summary, compact early too when the next step, if it grows the
context as much as the last one did, would leave the summary request no room beside the
context (its instruction and a full answer: `summary_room`): on a small window one large
tool output is enough to jump past the threshold and the window alike, and a summary asked
for then can only be the uncached fallback. Compact whatever the estimate when the last
assistant message was cut off by the window and no compaction followed it, or when the
context holds one the provider already rejected as too long. After a pause longer than the
cache's lifetime (the prefix is cold: the next call writes it all again), compact then if the
estimate is past `cold_cache_share` of the threshold: the rewrite costs the same either way,
and it is the smaller context that is written. A prompt that cannot fit even alone is refused
before anything is sent. A context past the threshold only because the latest compaction
left it there (what it cannot remove is that large) is not compacted for the threshold again
until more than a kept tail has come in (`left_above_by_compaction`).

**Natural breaks.** A compaction in the middle of a tool loop summarises the turn the model is
working on; at a break (a new prompt, or a step whose tool marks the end of a unit of work) it
summarises finished work. So past the threshold in the middle of a loop, the compaction waits
(action "wait") while a step like the last one (its answer and its results), counted twice,
still leaves the summary request its room in the window (`can_wait_for_break`); once it would
not, it runs there and then. Waiting never lets the context overflow any more than the early
trigger does: the next request is at most the window less the summary's room. The model may
ask for a compaction at a break (the `compact` tool): it runs at the next call when the context
is past `REQUESTED_SHARE` of the threshold (`compacts_on_request`), else it is declined.

**The threshold** is `context_window - reserve`, and at most DEFAULT_MAX_THRESHOLD (128k
tokens) on a larger window, unless the `compaction.threshold` setting asks otherwise (tokens,
or a share of the window; 1 is the window less the reserve): the window less the reserve
stays the most a context may reach before it is compacted (`window_limit`), whatever the
setting, and it alone bounds a prompt or an overflow's retry. `compaction.enabled` false
turns the automatic compaction off (a manual one still runs).

`CompactionSettings` is the one type of the `compaction.*` settings: its defaults and its
validation live here and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

from agent_server.context.estimate import estimate_weighted_tokens
from agent_server.context.summary_prompt import INSTRUCTION_TOKENS, SUMMARY_OUTPUT_TOKENS
from agent_server.errors import ConfigError
from agent_server.llm.messages import AssistantMessage, ToolResultMessage, UserMessage
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import CompactionEntry, Entry, MessageEntry
from agent_server.settings_schema import check, setting

RESERVE_MARGIN = 4096
MIN_RESERVE = 8192
MAX_RESERVE = 20480
DEFAULT_KEEP_RECENT_TOKENS = 8000
DEFAULT_KEEP_RECENT_TURNS = 2
# After a pause that let the cache expire, compact when past this share of the threshold.
DEFAULT_COLD_CACHE_SHARE = 0.5
# The kept tail never takes more than this share of the threshold, so that summary plus tail
# sit well below it even on a small window (no compaction right after a compaction).
KEPT_SHARE_OF_THRESHOLD = 3
# A compaction the model asks for runs when the context is past this share of the threshold:
# below it, the compaction (a summary call, then the smaller prefix written again) costs more
# than the calls left before the threshold would save by reading a smaller prefix.
REQUESTED_SHARE = 0.5
# Unless `compaction.threshold` says otherwise, compact past this many tokens even when the
# window holds more. Past it every call reads the whole prefix again (a tenth of the input
# price a token), and a compaction pays for that within a few calls; but what a compaction
# drops, the model no longer knows unless it reaches for it. 64k (stops 32-55) made a 200k
# window compact where no peer did: on the two held-out sessions of stop 56 it cost 6 to 9
# recoveries against the best peer's 0 and 1, and a lost decision and outputs (violations)
# where no peer had any; at 128k neither compacts, more-itertools compacts once instead of
# twice with fewer recoveries, and the bill is 6-24% higher on the runs that no longer
# compact so early (BENCHMARKS.md, "Held-out sessions, and what they changed"). On a 1M window
# it is still an eighth of it: every call past it reads the whole prefix again.
# `compaction.threshold: 1` compacts only near the window.
DEFAULT_MAX_THRESHOLD = 131_072
# The smallest `compaction.threshold` in tokens: below it the summary, the kept turns and the
# system prompt alone would pass it, and every call would compact.
MIN_THRESHOLD_TOKENS = 2048
# A tool result's `details` key a tool sets to say its call ended a unit of work (a natural
# break: a compaction there summarises finished work), and the value of the key
# COMPACTION_REQUEST_DETAIL that the `compact` tool sets when the model asks for one.
BREAK_DETAIL = "naturalBreak"
COMPACTION_REQUEST_DETAIL = "compactionRequest"

# "cached": the summary request is the current context plus one final instruction, so it is
# billed at the cache-read price; "fresh": a separate summary prompt (the seed's way).
SummaryMode: TypeAlias = Literal["cached", "fresh"]
SUMMARY_MODES: tuple[str, ...] = get_args(SummaryMode)
# Who writes a compaction's summary: agent-server ("local") or the provider, where it has a
# compaction of its own (agent/provider_compaction.py).
CompactionEngine: TypeAlias = Literal["local", "provider"]
COMPACTION_ENGINES: tuple[str, ...] = get_args(CompactionEngine)


# Seconds a compaction hook may run before it is stopped (the `compaction.hooks.timeout`
# setting), and the most it may write to its output.
DEFAULT_HOOK_TIMEOUT = 30.0
MAX_HOOK_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class CompactionHooks:
    """The `compaction.hooks` settings: shell commands run before and after each compaction
    (agent/compaction_hooks.py runs them; docs/sessions.md says what they get and may do)."""

    before: tuple[str, ...] = setting(
        (),
        "Your shell commands run before each compaction, in the workspace folder, with the "
        "compaction (reason, tokens) as JSON on their input. One may add instructions for the "
        "summary (its output) or cancel (exit code 2, or `{\"cancel\": true, \"reason\": "
        "\"...\"}`). See docs/sessions.md.",
        items="commands", authority=True, editor="machine",
    )
    after: tuple[str, ...] = setting(
        (),
        "Your shell commands run after each compaction, with the compaction and its summary "
        "as JSON on their input. See docs/sessions.md.",
        items="commands", authority=True, editor="machine",
    )
    timeout: float = setting(
        DEFAULT_HOOK_TIMEOUT,
        "Seconds a compaction hook may run before it is stopped.",
        exclusive_minimum=0, maximum=MAX_HOOK_TIMEOUT, authority=True, editor="machine",
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """The `compaction.*` settings.

    `reserve_tokens` None means the model's default; `model` None means the session's model
    writes the summaries.
    """

    enabled: bool = setting(
        True,
        "Compact the history automatically near the context window.",
        editor="window",
    )
    reserve_tokens: int | None = setting(
        None,
        "Room kept free below the window.",
        default_text="the model's max output + 4096, in [8k, 20k]",
        minimum=0, editor="window",
    )
    keep_recent_tokens: int = setting(
        DEFAULT_KEEP_RECENT_TOKENS,
        "Tokens of the most recent history a compaction keeps verbatim.",
        minimum=0, editor="window",
    )
    keep_recent_turns: int = setting(
        DEFAULT_KEEP_RECENT_TURNS,
        "Recent answered turns kept verbatim when they fit that tail (a prompt not answered "
        "yet is kept beside them, with older finished turns while the tail holds them).",
        minimum=1,
    )
    model: str | None = setting(
        None,
        "Model for summaries.",
        default_text="the session's model",
        editor="window",
    )
    # None: the window less the reserve; a number up to 1: that share of the window; above
    # 1: that many tokens. Never above the window less the reserve (window_limit).
    threshold: float | None = setting(
        None,
        "When to compact: a share of the context window (`0.6`) or a number of tokens "
        "(`120000`). Never later than the window less the reserve (`1`: only near the "
        "window). `compaction.enabled: false` turns compaction off.",
        default_text="the window less the reserve, at most 128k tokens",
        exclusive_minimum=0, editor="window",
    )
    hooks: CompactionHooks = CompactionHooks()
    summary: SummaryMode = setting(
        "cached",
        "`cached`: the summary request shares the cached prefix; `fresh`: a separate prompt.",
    )
    cold_cache_share: float = setting(
        DEFAULT_COLD_CACHE_SHARE,
        "After a pause longer than the cache's lifetime, compact at once when past this "
        "share of the threshold (1: only at the threshold).",
        exclusive_minimum=0, maximum=1,
    )
    engine: CompactionEngine = setting(
        "local",
        "Who writes a compaction's summary: `local` (agent-server) or `provider` (Anthropic's "
        "on-demand compaction, OpenAI's `/responses/compact`; agent-server elsewhere, with a "
        "notice). The same trigger, cut, ledger entry and events either way (docs/sessions.md).",
        value_texts=(
            "agent-server writes the summaries",
            "The provider compacts on its side where it can (Anthropic, OpenAI Responses); "
            "agent-server otherwise",
        ),
        editor="window",
    )
    # Opt-in: the provider clears old tool results before the model reads them, where it
    # can (Anthropic's context editing); each clearing rewrites the cache after it.
    clear_tool_results: bool = setting(
        False,
        "Let the provider clear old tool results before the model reads them (Anthropic's "
        "context editing). Each clearing rewrites the prompt cache after it; a notice shows "
        "what it cost.",
        editor="window",
    )

    def __post_init__(self) -> None:
        check(self)
        self._check_threshold()

    def _check_threshold(self) -> None:
        value = self.threshold
        if value is None:
            return
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(
                "setting 'compaction.threshold' must be a share of the window (above 0, at "
                f"most 1) or a number of tokens, not {value}"
            )
        if value > 1 and (value != int(value) or value < MIN_THRESHOLD_TOKENS):
            raise ConfigError(
                "setting 'compaction.threshold' in tokens must be a whole number of at least "
                f"{MIN_THRESHOLD_TOKENS} (or a share of the window, at most 1), not {value}"
            )


def reserve_tokens(model: ModelInfo, settings: CompactionSettings) -> int:
    """Tokens kept free below the window: the setting, else max output + 4096 in [8k, 20k]."""
    if settings.reserve_tokens is not None:
        return settings.reserve_tokens
    return min(max(model.max_output + RESERVE_MARGIN, MIN_RESERVE), MAX_RESERVE)


def window_limit(model: ModelInfo, settings: CompactionSettings) -> int:
    """The most a context may hold before it must be compacted: context window - reserve
    (room for the answer). It bounds a prompt sent alone and the retry after an overflow."""
    reserve = reserve_tokens(model, settings)
    if reserve < model.context_window:
        return model.context_window - reserve
    if settings.reserve_tokens is not None:
        raise ConfigError(
            f"compaction.reserveTokens ({reserve}) must be smaller than the context window "
            f"of {model.id} ({model.context_window}); lower it or remove the setting"
        )
    raise ConfigError(
        f"The context window of {model.id} ({model.context_window:,} tokens) is too small: "
        f"agent-server keeps {reserve:,} tokens of it for the model's answer (its maximum "
        f"output + {RESERVE_MARGIN:,}, at least {MIN_RESERVE:,}). Use a window well above "
        "that: start the model's server with a larger context and set 'contextWindow' to it "
        "(the setting, or the model's entry in the models file); or set "
        "'compaction.reserveTokens' below the window to keep less room for the answer."
    )


def compaction_threshold(model: ModelInfo, settings: CompactionSettings) -> int:
    """The estimate above which a compaction runs: the `compaction.threshold` setting (a
    share of the window, or tokens), at most window_limit; when it is unset, window_limit
    and at most DEFAULT_MAX_THRESHOLD tokens."""
    limit = window_limit(model, settings)
    wanted = settings.threshold
    if wanted is None:
        return min(limit, DEFAULT_MAX_THRESHOLD)
    tokens = wanted * model.context_window if wanted <= 1 else wanted
    return max(1, min(int(tokens), limit))


def summary_room(model: ModelInfo) -> int:
    """What the cached summary request needs beside the context: its instruction and a full
    answer."""
    return INSTRUCTION_TOKENS + min(SUMMARY_OUTPUT_TOKENS, model.max_output)


def leaves_no_summary_room(
    tokens: int, next_step_tokens: int, model: ModelInfo, settings: CompactionSettings
) -> bool:
    """With the cached summary: whether a context of `tokens` that grows by `next_step_tokens`
    (what the last step added) would leave the summary request no room in the window, while
    there is enough to summarise (over half the threshold). Only when that last step is small
    enough to be kept verbatim (last_step_tokens): the model has not read it yet, and a
    compaction now must not fold it into the summary unseen."""
    return (
        settings.summary == "cached"
        and tokens > compaction_threshold(model, settings) // 2
        and next_step_tokens <= last_step_tokens(model, settings)
        and tokens + next_step_tokens + summary_room(model) > model.context_window
    )


def can_wait_for_break(
    tokens: int, step_tokens: int, model: ModelInfo, settings: CompactionSettings
) -> bool:
    """In the middle of a tool loop, past the threshold: whether the compaction may wait for
    a natural break, that is, whether a step like the last one (`step_tokens`: its answer and
    its results) would still leave the summary request its room in the window. The step is
    counted twice: the estimate of text not yet counted by the provider (chars/4) runs low by
    up to half on dense text (a log page is about 2.7 characters a token), in the context's
    newest part and in the next step alike."""
    del settings  # the same rule whichever way the summary is asked for
    return tokens + 2 * step_tokens + summary_room(model) <= model.context_window


def compacts_on_request(tokens: int, model: ModelInfo, settings: CompactionSettings) -> bool:
    """Whether a compaction the model asked for is worth running on a context of `tokens`:
    past REQUESTED_SHARE of the threshold, and only while automatic compaction is on."""
    threshold = compaction_threshold(model, settings)
    return settings.enabled and tokens > REQUESTED_SHARE * threshold


def compacts_when_cold(tokens: int, model: ModelInfo, settings: CompactionSettings) -> bool:
    """Whether a context of `tokens` whose cached prefix went cold is compacted before the
    next call: past `cold_cache_share` of the threshold (never when disabled)."""
    threshold = compaction_threshold(model, settings)
    return settings.enabled and tokens > settings.cold_cache_share * threshold


def should_compact(tokens: int, model: ModelInfo, settings: CompactionSettings) -> bool:
    """Whether an estimate of `tokens` calls for a compaction (never when disabled)."""
    return settings.enabled and tokens > compaction_threshold(model, settings)


def left_above_by_compaction(
    tokens: int, compacted_to: int | None, model: ModelInfo, settings: CompactionSettings
) -> bool:
    """Whether a context of `tokens` is past the threshold only because the latest
    compaction left it there: it landed above the threshold (`compacted_to`, its tokens
    after: what no compaction removes, the system prompt, the tools and the carried block,
    pins above all, takes that much, after a lower threshold or a smaller model) and less has
    come in since than a compaction keeps verbatim (max_kept_tokens). Another compaction
    would land there again and pay for a summary for little; the threshold compaction waits
    until more has come in. Never past window_limit: room for the answer comes first."""
    threshold = compaction_threshold(model, settings)
    return (
        compacted_to is not None
        and compacted_to > threshold
        and tokens <= window_limit(model, settings)
        and tokens - compacted_to < max_kept_tokens(model, settings)
    )


def max_kept_tokens(model: ModelInfo, settings: CompactionSettings) -> int:
    """The cap on a compaction's kept tail for `find_cut_point(max_kept_tokens=...)`:
    keep_recent_tokens, but at most a third of the threshold."""
    cap = compaction_threshold(model, settings) // KEPT_SHARE_OF_THRESHOLD
    return min(settings.keep_recent_tokens, cap)


def last_step_tokens(model: ModelInfo, settings: CompactionSettings) -> int:
    """The most a compaction keeps of the latest step (or of a prompt not answered yet) when
    not even a split of the last turn fits the kept-tail budget: half the threshold."""
    return compaction_threshold(model, settings) // 2


def has_uncompacted_truncation(entries: Sequence[Entry]) -> bool:
    """The last assistant message on the path (a failed call's aside) was cut off by the
    context window (stop reason contextOverflow) and no compaction entry follows it.

    `entries` is a root-to-leaf path or its tail (EntryTree.projection_entries).
    """
    for entry in reversed(entries):
        if isinstance(entry, CompactionEntry):
            return False
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            if entry.message.stop_reason == "error":
                continue  # a failed call (never sent again) does not undo the cut
            return entry.message.stop_reason == "contextOverflow"
    return False


# Where the next call stands in the turn: answering a prompt ("turn"), after a step whose
# tool ended a unit of work ("break") or asked for a compaction ("requested"), or in the
# middle of a tool loop ("loop").
StepPosition: TypeAlias = Literal["turn", "break", "requested", "loop"]


def step_position(entries: Sequence[Entry]) -> StepPosition:
    """Where the call after `entries` (a root-to-leaf path or its tail) stands: see
    StepPosition. The tool results of the last step decide between "loop", "break" (one has
    BREAK_DETAIL) and "requested" (one has COMPACTION_REQUEST_DETAIL); a prompt, or no
    message at all, is "turn". Notes (an external edit) are skipped."""
    results: list[ToolResultMessage] = []
    for entry in reversed(entries):
        if isinstance(entry, CompactionEntry):
            break
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, ToolResultMessage):
            results.append(message)
        elif isinstance(message, UserMessage):
            if message.note is None and not results:
                return "turn"
        else:  # the assistant message whose calls these results answer
            break
    if not results:
        return "turn"
    details = [result.details or {} for result in results]
    if any(detail.get(COMPACTION_REQUEST_DETAIL) for detail in details):
        return "requested"
    if any(detail.get(BREAK_DETAIL) for detail in details):
        return "break"
    return "loop"


def requested_focus(entries: Sequence[Entry]) -> str | None:
    """What the model asked a requested compaction's summary to keep (the `focus` of its
    request in the last step's results), if anything."""
    if step_position(entries) != "requested":
        return None
    for entry in reversed(entries):
        message = entry.message if isinstance(entry, MessageEntry) else None
        if not isinstance(message, ToolResultMessage):
            continue
        request = (message.details or {}).get(COMPACTION_REQUEST_DETAIL)
        if isinstance(request, dict) and isinstance(request.get("focus"), str):
            return str(request["focus"]).strip() or None
        if request:
            return None
    return None


@dataclass(frozen=True, slots=True)
class OversizedPrompt:
    """A prompt too large to send even alone: `tokens` (estimated) over `limit`, the most a
    prompt can take with the system prompt and tools while leaving room for an answer."""

    entry_id: str
    tokens: int
    limit: int


def find_oversized_prompt(
    entries: Sequence[Entry], *, prefix_tokens: int, threshold: int
) -> OversizedPrompt | None:
    """The prompt awaiting its first answer (the last message on the path, when it is the
    user's), if it cannot fit in a request even alone: prefix + prompt > threshold.

    Nothing a compaction does can make such a request fit (a compaction summarises history;
    the prompt itself must be sent verbatim), so it is refused before anything is sent.
    """
    for entry in reversed(entries):
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if not isinstance(message, UserMessage) or message.note is not None:
            return None
        tokens = estimate_weighted_tokens(message)
        limit = threshold - prefix_tokens
        return OversizedPrompt(entry.id, tokens, limit) if tokens > limit else None
    return None
