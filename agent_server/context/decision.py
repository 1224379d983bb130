"""Whether and how to compact, decided whole by pure functions of plain values, as pi's
compaction.ts decides with `shouldCompact`: invariants 4 and 8 of DESIGN.md.

`decide` is the decision before a model call. It takes the estimate, the model, the
compaction settings and what the caller read from the ledger and the clock (a prompt too
large even alone, an answer cut off by the window, a context the provider already rejected,
the last step's size, a cold prefix, where the call stands in the turn, what the latest
compaction left) and returns all of it: refuse, compact and for which reason, wait for a
natural break, or send; and whether the context as it stands is known not to fit
(`unsendable`), which keeps it from being sent whatever the action said (the overflow
recovery runs instead). After an overflow, `decide_overflow` says whether the prompt's one
recovery compacts or gives up at once, and `retries_after_overflow` whether the context it
compacted is sent again. The rules they combine (the threshold, the summary's room, a
natural break, a cold prefix, a requested compaction) are context/trigger.py's.

The context manager (agent/context_manager.py) gathers the inputs and acts on the answer; it
decides nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from agent_server.context.trigger import (
    CompactionSettings,
    StepPosition,
    can_wait_for_break,
    compaction_threshold,
    compacts_on_request,
    compacts_when_cold,
    leaves_no_summary_room,
    left_above_by_compaction,
    reserve_tokens,
    window_limit,
)
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import CompactionReason

# "wait": past the threshold in the middle of a tool loop, sent as it is until a break while
# a step like the last one leaves room (can_wait_for_break).
ContextAction: TypeAlias = Literal["send", "compact", "wait", "refuse"]
DecisionReason: TypeAlias = CompactionReason | Literal["oversized"]
# Why a context must not be sent as it stands: its estimate is over the window ("window"), or
# it holds one the provider already rejected as too long, nothing compacted since ("rejected").
Unsendable: TypeAlias = Literal["window", "rejected"]


@dataclass(frozen=True, slots=True)
class ContextDecision:
    """What happens to the context before a model call, and why.

    `action` "send": as it is; "compact": compact first, for `reason`; "wait": sent as it is
    although `reason` ("threshold") holds, the compaction waiting for a natural break;
    "refuse": nothing is sent (`reason` "oversized": a prompt that cannot fit even alone).
    `tokens` is the estimate the decision was taken on, `threshold` the compaction threshold,
    `window` the model's context window. `unsendable`: the context as it stands is known not
    to fit (Unsendable), whatever the action; None when it may be sent.
    """

    action: ContextAction
    reason: DecisionReason | None
    tokens: int
    threshold: int
    window: int
    unsendable: Unsendable | None = None


def decide(
    tokens: int,
    model: ModelInfo,
    settings: CompactionSettings,
    *,
    manual: bool = False,
    oversized: bool = False,
    truncated: bool = False,
    holds_rejected: bool = False,
    next_step_tokens: int = 0,
    cold: bool = False,
    position: StepPosition = "turn",
    answer_tokens: int = 0,
    compacted_to: int | None = None,
) -> ContextDecision:
    """The decision before a call on a context estimated at `tokens`.

    `manual`: the user asked for a compaction (agent/compact): it runs, whatever the
    estimate and the settings; `oversized`: the prompt awaiting its answer cannot fit even alone
    (trigger.find_oversized_prompt): refused, whatever the settings; `truncated`: the last
    answer was cut off by the window (has_uncompacted_truncation); `holds_rejected`: the
    context starts with one the provider already rejected as too long for this model (nothing
    was compacted since): it is compacted for "overflow" instead of being sent to be rejected
    again, and is unsendable as it stands; `next_step_tokens`: what the last step added (the
    estimate of what came after the last usage), the guess for the next one
    (leaves_no_summary_room); `cold`: the pause since the last call outlived the cache
    (`went_cold`), so the next call writes the whole prefix again (compacts_when_cold, reason
    "idle"); `position`: where the call stands in the turn (step_position): in a "loop", a
    threshold compaction waits while a step like the last one (`answer_tokens`, the last
    answer's output, plus `next_step_tokens`) leaves room (can_wait_for_break); "requested",
    the model asked for a compaction (compacts_on_request, reason "requested");
    `compacted_to`: the tokens the latest compaction on the path left (None without one):
    past the threshold only because of it, no threshold compaction is taken
    (left_above_by_compaction). With compaction disabled, always "send" (a manual compaction
    and a prompt too large aside).
    """
    threshold = compaction_threshold(model, settings)
    window = model.context_window
    known: Unsendable | None = (
        "window" if tokens > window else "rejected" if holds_rejected else None
    )

    def decision(action: ContextAction, reason: DecisionReason | None) -> ContextDecision:
        return ContextDecision(action, reason, tokens, threshold, window, known)

    if manual:
        return decision("compact", "manual")
    if oversized:
        return decision("refuse", "oversized")
    if not settings.enabled:
        return decision("send", None)
    if truncated:
        return decision("compact", "truncation")
    if holds_rejected:
        return decision("compact", "overflow")
    cold_compacts = cold and compacts_when_cold(tokens, model, settings)
    if leaves_no_summary_room(tokens, next_step_tokens, model, settings):
        return decision("compact", "threshold")
    if tokens > threshold and not left_above_by_compaction(tokens, compacted_to, model, settings):
        step = answer_tokens + next_step_tokens
        if position != "loop" or not can_wait_for_break(tokens, step, model, settings):
            return decision("compact", "threshold")
        return decision("compact", "idle") if cold_compacts else decision("wait", "threshold")
    if position == "requested" and compacts_on_request(tokens, model, settings):
        return decision("compact", "requested")
    if cold_compacts:
        return decision("compact", "idle")
    return decision("send", None)


def went_cold(pause: float | None, ttl: float | None) -> bool:
    """Whether a pause of `pause` seconds since the last call that used the cache outlived
    the cache's lifetime `ttl` (None: no call yet, or a provider that keeps no cache)."""
    return pause is not None and ttl is not None and pause > ttl


# After the provider rejected a request as too long, or its estimate was over the window:
# "compact": the prompt's one overflow compaction runs; "spent": that recovery was spent
# already, or compaction is off: give up; "server window": a local server says its window
# is below the one configured, so compacting for the configured one would not help: give up,
# saying so; "server too small": that window cannot even hold the prefix and the answer's
# room.
OverflowStep: TypeAlias = Literal["compact", "spent", "server window", "server too small"]


def decide_overflow(
    model: ModelInfo,
    settings: CompactionSettings,
    *,
    recovered: bool,
    server_window: int | None,
    prefix_tokens: int,
) -> OverflowStep:
    """What the overflow recovery does first. `recovered`: the current prompt's one recovery
    ran already; `server_window`: the window the server said it has, if it said one (only a
    local model's is believed over the configured one); `prefix_tokens`: the system prompt
    and the tools."""
    local = model.vendor == "local"
    if local and server_window is not None and server_window < model.context_window:
        reserve = server_reserve(model, settings, server_window)
        too_small = server_window <= reserve + prefix_tokens
        return "server too small" if too_small else "server window"
    if recovered or not settings.enabled:
        return "spent"
    return "compact"


def server_reserve(model: ModelInfo, settings: CompactionSettings, server_window: int) -> int:
    """The room kept for the answer on the window a server said it has (its model's output
    at most a quarter of it)."""
    smaller = replace(
        model, context_window=server_window, max_output=min(model.max_output, server_window // 4)
    )
    return reserve_tokens(smaller, settings)


def retries_after_overflow(
    before: int,
    after: ContextDecision,
    model: ModelInfo,
    settings: CompactionSettings,
    *,
    compacted: bool,
) -> bool:
    """Whether the overflow compaction's context (`after`: the decision on it; `compacted`:
    the compaction was kept) is sent again, once: smaller than the `before` tokens that did
    not fit, within window_limit, and not known to be unsendable. Otherwise the error
    surfaces: no compaction loop, no retry loop."""
    return (
        compacted
        and after.tokens < before
        and after.tokens <= window_limit(model, settings)
        and after.unsendable is None
    )
