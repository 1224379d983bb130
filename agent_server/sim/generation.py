"""From a planned reply to the output actually sent: token costs and cut-offs.

The output budget is `min(max_tokens, context_window - prompt_tokens)`. Output is produced in
order (thinking, text, tool calls); when the budget runs out, the block being produced is cut at
a token boundary and the rest is dropped (a tool call that does not fit whole is not sent). The
stop is `max_tokens` when max_tokens was the binding limit, `context_window` when the window was.

Costs: thinking and text cost their tokens; a tool call costs its name, its JSON arguments and
TOOL_CALL_OVERHEAD. Every answer costs at least one token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from agent_server.sim.responder import PlannedCall, PlannedReply
from agent_server.sim.tokenizer import count_tokens, truncate_to_tokens

TOOL_CALL_OVERHEAD = 8

Stop: TypeAlias = Literal["end_turn", "tool_use", "max_tokens", "context_window", "pause_turn"]
ThinkingMode: TypeAlias = Literal["shown", "hidden", "none"]


@dataclass(frozen=True, slots=True)
class Generation:
    thinking: str  # empty when not shown
    text: str
    calls: tuple[PlannedCall, ...]
    output_tokens: int
    reasoning_tokens: int  # thinking tokens, shown or hidden
    stop: Stop

    @property
    def truncated(self) -> bool:
        return self.stop in ("max_tokens", "context_window")


def call_tokens(call: PlannedCall) -> int:
    arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
    return TOOL_CALL_OVERHEAD + count_tokens(call.name) + count_tokens(arguments)


def generate(
    reply: PlannedReply,
    *,
    prompt_tokens: int,
    max_tokens: int,
    context_window: int,
    thinking: ThinkingMode,
) -> Generation:
    room = max(context_window - prompt_tokens, 0)
    budget = min(max_tokens, room)
    limit_stop: Stop = "max_tokens" if max_tokens <= room else "context_window"
    used = 0

    thinking_text = reply.thinking if thinking != "none" else ""
    thinking_tokens = count_tokens(thinking_text)
    if thinking_tokens > budget:
        kept = truncate_to_tokens(thinking_text, budget)
        return Generation(
            thinking=kept if thinking == "shown" else "",
            text="",
            calls=(),
            output_tokens=budget,
            reasoning_tokens=budget,
            stop=limit_stop,
        )
    used += thinking_tokens
    shown_thinking = thinking_text if thinking == "shown" else ""

    text_tokens = count_tokens(reply.text)
    if used + text_tokens > budget:
        return Generation(
            thinking=shown_thinking,
            text=truncate_to_tokens(reply.text, budget - used),
            calls=(),
            output_tokens=budget,
            reasoning_tokens=thinking_tokens,
            stop=limit_stop,
        )
    used += text_tokens

    calls: list[PlannedCall] = []
    for call in reply.calls:
        cost = call_tokens(call)
        if used + cost > budget:
            return Generation(
                thinking=shown_thinking,
                text=reply.text,
                calls=tuple(calls),
                output_tokens=budget,
                reasoning_tokens=thinking_tokens,
                stop=limit_stop,
            )
        used += cost
        calls.append(call)

    if used == 0:
        if budget == 0:
            return Generation(shown_thinking, "", (), 0, thinking_tokens, limit_stop)
        used = 1
    return Generation(
        thinking=shown_thinking,
        text=reply.text,
        calls=tuple(calls),
        output_tokens=used,
        reasoning_tokens=thinking_tokens,
        stop="tool_use" if calls else "end_turn",
    )


def paused(generation: Generation) -> Generation:
    """The answer as a turn the API paused (Anthropic `pause_turn`): what came before the tool
    calls. (The request that sends it back ends with an assistant message, which the scenario
    answers with the fallback's text.)"""
    if generation.truncated:
        return generation
    calls = sum(call_tokens(call) for call in generation.calls)
    output = max(1, generation.output_tokens - calls)
    return replace(generation, calls=(), output_tokens=output, stop="pause_turn")
