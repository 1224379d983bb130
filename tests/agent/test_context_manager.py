"""The context manager as a plain object: a real ledger, and a model call it is given.

The model call stands in for a provider at the manager's one seam: it answers summary
requests, rejects a request whose size (chars/4 times a density factor) is over its window,
as a provider would, and records every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent import events
from agent_server.agent.context_manager import ContextManager, ContextView
from agent_server.agent.context_view import ToolListSource
from agent_server.agent.session_config import FixedConfig
from agent_server.agent.summary_request import cached_request_tokens, previous_request_end
from agent_server.context.estimate import estimate_full, estimate_weighted_tokens
from agent_server.context.projection import Projection
from agent_server.context.summary_prompt import (
    INSTRUCTION_TOKENS,
    MIN_SUMMARY_TOKENS,
    SUMMARY_REQUEST_MARKER,
    SUMMARY_SYSTEM_PROMPT,
    fresh_prompt_tokens,
)
from agent_server.context.trigger import CompactionSettings
from agent_server.errors import ContextOverflowError, PromptTooLargeError, ProviderError
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    TextContent,
    ToolSpec,
    Usage,
    UserMessage,
)
from agent_server.llm.models import BUILTIN_MODELS, ModelInfo
from agent_server.llm.stream import CacheUse
from agent_server.session.entries import CompactionEntry, PinEntry
from agent_server.session.ledger import Ledger
from tests.session.builders import assistant, call, result, user

SIM_SMALL = next(m for m in BUILTIN_MODELS if m.id == "sim-small")  # 32k window, 24576 threshold
TOOLS = (ToolSpec("read", "Read a file.", {"type": "object", "properties": {}}),)
SYSTEM = "You are a coding agent."


@dataclass
class Provider:
    """Answers summary requests; rejects what does not fit `window` once counted at
    `density` tokens per 4 characters (dense content counts more than chars/4 says)."""

    window: int = SIM_SMALL.context_window
    density: float = 1.0
    fail: bool = False
    requests: list[Context] = field(default_factory=list)
    shared: list[CacheUse] = field(default_factory=list)  # how each used the session's cache
    budgets: list[int] = field(default_factory=list)  # each request's max_tokens

    async def __call__(
        self, context: Context, model: ModelInfo, cache: CacheUse, max_tokens: int
    ) -> AssistantMessage:
        self.requests.append(context)
        self.shared.append(cache)
        self.budgets.append(max_tokens)
        if estimate_full(context) * self.density > self.window:
            raise ContextOverflowError("prompt is too long", status=400)
        if self.fail:
            raise ProviderError("the summary model is down")
        last = context.messages[-1]
        assert SUMMARY_REQUEST_MARKER in str(last), "only summaries go through this call"
        return AssistantMessage(
            (TextContent(f"SUMMARY {len(self.requests)}"),),
            "stop",
            usage=Usage(input=100, output=10),
        )


@dataclass
class Harness:
    ledger: Ledger
    provider: Provider
    manager: ContextManager
    seen: list[events.AgentEvent]
    clock: list[float]

    def of(self, kind: type) -> list:  # type: ignore[type-arg]
        return [e for e in self.seen if isinstance(e, kind)]


def make_manager(
    ledger: Ledger, provider: Provider, tools: ToolListSource | tuple[ToolSpec, ...] = TOOLS,
    **extra: Any,
) -> ContextManager:
    """A manager on sim-small with the default settings, as a session would build it."""
    extra.setdefault("emit", events.ignore_events)
    extra.setdefault("config", FixedConfig(SIM_SMALL, SIM_SMALL, CompactionSettings()))
    return ContextManager(ledger=ledger, system_prompt=SYSTEM, tools=tools, call=provider, **extra)


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    provider = Provider()
    seen: list[events.AgentEvent] = []
    clock = [1000.0]
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never") as led:
        manager = make_manager(led, provider, emit=seen.append, clock=lambda: clock[0])
        manager.begin_turn("t1")
        yield Harness(led, provider, manager, seen, clock)


def fill(ledger: Ledger, turns: int, result_chars: int = 8000) -> None:
    """Whole turns: a prompt, a read and its result, an answer."""
    for turn in range(turns):
        ledger.append_message(user(f"prompt {turn}"))
        ledger.append_message(assistant("reading", call(f"c{turn}", path=f"f{turn}.py")))
        ledger.append_message(result(f"c{turn}", f"line {turn}\n" * (result_chars // 7)))
        ledger.append_message(assistant(f"answer {turn}"))


def decisions(h: Harness) -> list[tuple[str, str | None]]:
    return [(e.decision.action, e.decision.reason) for e in h.of(events.ContextDecided)]


# --- the pipeline ----------------------------------------------------------------------------


async def test_a_small_context_is_sent_as_it_is_and_the_decision_says_why(h: Harness) -> None:
    fill(h.ledger, 2)
    h.ledger.append_message(user("next"))
    view = await h.manager.prepare()
    assert view.context == h.manager.view().context
    [decided] = h.of(events.ContextDecided)
    assert (decided.turn_id, decided.decision.action, decided.decision.reason) == (
        "t1",
        "send",
        None,
    )
    assert decided.decision.tokens == view.tokens
    assert decided.decision.threshold == SIM_SMALL.context_window - 8192
    assert decided.decision.window == SIM_SMALL.context_window
    assert h.provider.requests == []


async def test_a_threshold_compaction_measures_once_and_sends_what_it_built(h: Harness) -> None:
    fill(h.ledger, 8)  # ~27k tokens (3 a line): over sim-small's 24576 threshold
    h.ledger.append_message(user("next"))
    before = h.manager.view().tokens
    view = await h.manager.prepare()
    assert decisions(h) == [("compact", "threshold")]
    [started] = h.of(events.CompactionStarted)
    [finished] = h.of(events.CompactionFinished)
    [entry] = [e for e in h.ledger.tree.entries if isinstance(e, CompactionEntry)]
    # One "tokens before", the estimate the decision was taken on, everywhere.
    assert h.of(events.ContextDecided)[0].decision.tokens == before
    assert started.tokens_before == finished.tokens_before == entry.tokens_before == before
    # What is sent is what the ledger now projects, and tokens after is its estimate.
    fresh = h.manager.view()
    assert view.context == fresh.context
    assert finished.tokens_after == entry.tokens_after == view.tokens == fresh.tokens
    assert view.tokens < before
    assert h.manager.window_number(view) == 2
    # The summary request shared the cached prefix: the context plus one instruction.
    [request] = h.provider.requests
    assert request.system_prompt == SYSTEM and request.tools == TOOLS
    assert request.messages[:-1] == h.manager.view_of(request.messages[:-1]).messages


async def test_pins_over_a_lowered_threshold_do_not_compact_every_call(tmp_path: Path) -> None:
    """Pins made under a larger threshold (2,000 tokens), then the threshold lowered to
    2,048 (with this test's small system prompt): a compaction carries every pin and lands
    above it. The user is told once; the
    next call, with little added, is sent as it is instead of compacting again for nothing;
    once more than a kept tail has come in, it compacts again. No pin is ever dropped."""
    provider, seen = Provider(), list[events.AgentEvent]()
    config = FixedConfig(SIM_SMALL, SIM_SMALL, CompactionSettings(threshold=2048))
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never") as led:
        h = Harness(led, provider, make_manager(led, provider, config=config, emit=seen.append),
                    seen, [])
        h.manager.begin_turn("t1")
        for number in range(4):
            led.add(PinEntry, f"p{number}", "add", "rule", f"rule {number}: " + "keep it " * 240, "user")
        fill(led, 4, result_chars=4000)
        led.append_message(user("next"))
        first = await h.manager.prepare()
        assert decisions(h) == [("compact", "threshold")]
        assert first.tokens > 2048
        [said] = [n for n in h.of(events.Notice) if "still over" in n.message]
        assert "4 pins" in said.message and "/pins" in said.message
        led.append_message(assistant("done"))
        led.append_message(user("and the tests?"))
        await h.manager.prepare()
        assert decisions(h)[1:] == [("send", None)]
        fill(led, 1, result_chars=6000)  # more than a kept tail (a third of the threshold)
        led.append_message(user("next"))
        await h.manager.prepare()
        assert decisions(h)[2:] == [("compact", "threshold")]
        assert len([n for n in h.of(events.Notice) if "still over" in n.message]) == 1
        latest = [e for e in led.tree.entries if isinstance(e, CompactionEntry)][-1]
        assert latest.carried is not None and len(latest.carried.pins) == 4


async def test_the_summary_request_is_the_previous_request_plus_its_instruction(
    h: Harness,
) -> None:
    """A compaction before the next step: the step just taken (a call and its large result)
    stays verbatim, so the summary request leaves it out and is the request that step
    answered plus the instruction, read from the cache to its end ("extend")."""
    fill(h.ledger, 7)
    h.ledger.append_message(user("read the log"))
    answered = h.manager.view().messages  # what the last request sent
    h.ledger.append_message(assistant("reading", call("log", path="app.log")))
    h.ledger.append_message(result("log", "2024-05-06 ERROR boom\n" * 400))
    view = await h.manager.prepare()
    [request] = h.provider.requests
    assert h.provider.shared == ["extend"]
    assert request.messages[:-1] == answered[:-1]
    last = request.messages[-1]
    assert isinstance(last, UserMessage) and last.content[:-1] == answered[-1].content
    instruction = last.content[-1].text  # type: ignore[union-attr]
    assert instruction.startswith(SUMMARY_REQUEST_MARKER)
    # The kept messages the request still holds are named; the step left out is kept.
    [entry] = [e for e in h.ledger.tree.entries if isinstance(e, CompactionEntry)]
    kept = len(view.messages)  # the summary heads the first kept message
    assert "compacted into the following summary" in str(view.messages[0])
    assert f"except its last {kept - 2} messages:" in instruction
    assert view.messages[-1] == h.ledger.tree.entries[-2].message  # type: ignore[union-attr]
    assert entry.first_kept_entry_id is not None


async def test_the_room_of_the_summary_request_is_counted_on_what_it_sends(h: Harness) -> None:
    """The sqlparse session of the recall benchmark: a step adds a test log of ~6k tokens to a
    context the provider counted at 23,554 (prompt) + 33 (answer), and compacts. The whole
    context's estimate leaves the cached request less than MIN_SUMMARY_TOKENS (and the log's
    real count is a tenth more still), but that request leaves the log out: it is the
    previous request, counted by the provider, plus the instruction, with room to spare. It
    is the one summary request, whatever the log's estimate."""
    fill(h.ledger, 2)
    h.ledger.append_message(user("run the tests"))
    usage = Usage(input=130, output=33, cache_read=23_424)
    h.ledger.append_message(assistant("", call("t", "bash", command="pytest -v"), usage=usage))
    log = "".join(f"tests/test_sql.py::test_case_{i} PASSED [{i % 100:3d}%]\n" for i in range(350))
    h.ledger.append_message(result("t", log, "bash"))
    view = h.manager.view()
    whole_room = SIM_SMALL.context_window - view.tokens - INSTRUCTION_TOKENS
    assert 0 < whole_room < MIN_SUMMARY_TOKENS
    await h.manager.prepare()
    assert decisions(h) == [("compact", "threshold")]
    assert h.provider.shared == ["extend"]  # no fresh prompt after it
    assert h.provider.budgets == [SIM_SMALL.max_output]


async def test_the_cached_request_counts_the_instruction_it_sends(h: Harness) -> None:
    """The summary instruction grows with the user's focus text (and the file lists and the
    carried block). Past INSTRUCTION_TOKENS, the cached request's room counts the instruction
    it sends: no request asks for more than the window holds (its prompt and its answer's
    budget, which a provider refuses): here the fresh prompt is asked, not the cached one."""
    fill(h.ledger, 4)
    planned_room = MIN_SUMMARY_TOKENS + 500  # enough, were the instruction INSTRUCTION_TOKENS
    pad = SIM_SMALL.context_window - INSTRUCTION_TOKENS - planned_room - h.manager.view().tokens
    words = pad
    while estimate_weighted_tokens(user("note " * words)) > pad:
        words -= max(1, words // 50)
    h.ledger.append_message(user("note " * words))
    h.ledger.append_message(assistant("noted"))
    room = SIM_SMALL.context_window - h.manager.view().tokens - INSTRUCTION_TOKENS
    assert room >= MIN_SUMMARY_TOKENS
    focus = "Keep every detail about the parser, its error paths and its tests. " * 400
    await h.manager.compact("manual", instructions=focus)
    for request, budget in zip(h.provider.requests, h.provider.budgets, strict=True):
        assert estimate_full(request) + budget <= SIM_SMALL.context_window
    assert set(h.provider.shared) == {"none"}  # fresh prompts only: the cached one had no room
    assert [e for e in h.ledger.tree.entries if isinstance(e, CompactionEntry)]


def test_the_previous_request_is_the_providers_count_when_its_usage_is_current() -> None:
    usage = Usage(input=130, output=33, cache_read=23_424)
    messages = (user("run"), assistant("", call("t", "bash"), usage=usage), result("t", "log"))
    fresh = Projection(messages, (None, None, None), None, fresh_from=0)
    assert cached_request_tokens(fresh, 1, 29_700) == 23_554  # the answer's prompt
    assert cached_request_tokens(fresh, 3, 29_700) == 29_700  # the whole context is sent
    # The answer came before the latest compaction: it measured a context that is gone.
    stale = Projection(messages, (None, None, None), None, fresh_from=2)
    assert cached_request_tokens(stale, 1, 29_700) == 29_700


def test_the_previous_request_ends_before_the_last_answer_only_when_it_is_kept() -> None:
    messages = (user("a"), assistant("b"), user("c"), assistant("d", call("x")), result("x", "ok"))
    assert previous_request_end(messages, kept=2) == 3  # the call and its result are kept
    assert previous_request_end(messages, kept=3) == 3
    assert previous_request_end(messages, kept=1) == 5  # the call would be summarised
    assert previous_request_end(messages, kept=0) == 5
    assert previous_request_end(messages[:1], kept=1) == 1  # nothing answered yet


async def test_a_prompt_that_cannot_fit_alone_is_refused_before_any_call(h: Harness) -> None:
    fill(h.ledger, 1)
    huge = h.ledger.append_message(user("x" * 200_000))  # ~50k tokens on a 32k window
    with pytest.raises(PromptTooLargeError) as refused:
        await h.manager.prepare()
    assert refused.value.entry_id == huge.id
    assert "Shorten it" in refused.value.message
    assert decisions(h) == [("refuse", "oversized")]
    assert h.provider.requests == []


async def test_a_large_prompt_that_fits_is_kept_verbatim_when_the_history_is_compacted(
    h: Harness,
) -> None:
    fill(h.ledger, 10)
    # ~14k tokens: more than the 8k tail and than half the threshold (12288), but the
    # summary's budget (8192) still fits beside it under the threshold.
    big = "y" * 56_000
    h.ledger.append_message(user(big))
    view = await h.manager.prepare()
    assert decisions(h) == [("compact", "threshold")]
    texts = [b.text for m in view.messages for b in m.content if isinstance(b, TextContent)]
    assert big in texts  # the model reads the prompt it must answer, whole


# --- overflow ----------------------------------------------------------------------------------


async def test_an_overflow_is_recovered_once_with_a_fresh_bounded_summary(h: Harness) -> None:
    h.ledger.append_message(user("paste: " + "z" * 60_000))  # dense: really over the window
    h.ledger.append_message(assistant("I see a long paste."))
    fill(h.ledger, 2)
    h.ledger.append_message(user("and now?"))
    sent = await h.manager.prepare()
    assert decisions(h) == [("send", None)]  # chars/4 says it fits
    h.provider.density = 2.0
    after = await h.manager.recover_overflow(sent, "prompt is too long", rejected=True)
    [summary_request] = h.provider.requests
    # Fresh, never the rejected request again, and bounded: the paste is cut in the middle.
    assert summary_request.system_prompt == SUMMARY_SYSTEM_PROMPT
    assert summary_request.tools == ()
    text = summary_request.messages[0].content[0].text  # type: ignore[union-attr]
    assert "characters cut here" in text and "z" * 60_000 not in text
    limit = fresh_prompt_tokens(SIM_SMALL.context_window, SIM_SMALL.max_output)
    assert estimate_full(summary_request) <= limit
    assert after.tokens < sent.tokens
    overflow = [(o.kind, o.action) for o in h.of(events.OverflowHappened)]
    assert overflow == [("rejected", "compacting"), ("rejected", "retrying")]
    # A second overflow of the same prompt gives up, saying what to do.
    with pytest.raises(ContextOverflowError) as gave_up:
        await h.manager.recover_overflow(after, "prompt is too long", rejected=True)
    assert "rewind to before it, or shorten it" in gave_up.value.message
    assert h.of(events.OverflowHappened)[-1].action == "gaveUp"
    assert len(h.provider.requests) == 1  # no second compaction


def test_the_terminal_is_told_to_rewind_to_before_a_prompt_not_an_entry(h: Harness) -> None:
    """The terminal's /rewind lists prompts by number: its give-up advice names the prompt
    that brought the largest message in, not an entry id it has no use for."""
    fill(h.ledger, 1)
    h.ledger.append_message(user("read   the whole\nlog"))
    h.ledger.append_message(assistant("reading", call("log", path="app.log")))
    h.ledger.append_message(result("log", "2024-05-06 ERROR boom\n" * 2000))
    terminal = make_manager(h.ledger, h.provider, rewind="prompt")
    said = terminal.overflow.gave_up_message(terminal.view())
    assert '/rewind to before your prompt "read the whole log", or shorten it' in said
    assert "(entry " not in said
    assert "(entry " in h.manager.overflow.gave_up_message(h.manager.view())  # the editor's


async def test_a_summary_request_still_too_long_leaves_the_oldest_messages_out(
    h: Harness,
) -> None:
    fill(h.ledger, 30, result_chars=1500)
    h.ledger.append_message(user("go on"))
    view = h.manager.view()
    # The fresh prompt at its full budget (~13k tokens by chars/4) and at half of it are
    # rejected; at a quarter (6144) it fits.
    h.provider.density = 3.0
    h.provider.window = 20_000
    after = await h.manager.recover_overflow(view, "prompt is too long", rejected=True)
    sizes = [estimate_full(r) for r in h.provider.requests]
    assert len(sizes) >= 2 and sizes == sorted(sizes, reverse=True)
    last = h.provider.requests[-1].messages[0].content[0].text  # type: ignore[union-attr]
    assert "older messages left out here" in last
    assert after.tokens < view.tokens


async def test_a_context_holding_a_rejected_one_is_never_sent_again(h: Harness) -> None:
    fill(h.ledger, 3)
    h.ledger.append_message(user("first"))
    rejected = await h.manager.prepare()
    h.provider.fail = True  # the summary cannot be made: the recovery gives up
    with pytest.raises(ContextOverflowError):
        await h.manager.recover_overflow(rejected, "prompt is too long", rejected=True)
    # The next prompt: the context holds the rejected one, so it is compacted, not sent.
    h.manager.begin_turn("t2")
    h.ledger.append_message(user("second"))
    calls_before = len(h.provider.requests)
    with pytest.raises(ContextOverflowError):
        await h.manager.prepare()
    assert decisions(h)[-1] == ("compact", "overflow")
    assert len(h.provider.requests) == calls_before + 1  # one summary attempt, no resend
    # Once a compaction went through, the memory no longer applies.
    h.provider.fail = False
    h.manager.begin_turn("t3")
    view = await h.manager.prepare()
    assert decisions(h)[-1] == ("compact", "overflow")
    assert h.of(events.CompactionFinished)[-1].status == "completed"
    h.manager.begin_turn("t4")
    h.ledger.append_message(assistant("ok"))
    h.ledger.append_message(user("third"))
    again = await h.manager.prepare()
    assert decisions(h)[-1] == ("send", None)
    assert again.tokens >= view.tokens


async def test_a_context_over_the_window_is_not_sent(h: Harness) -> None:
    off = FixedConfig(SIM_SMALL, SIM_SMALL, CompactionSettings(enabled=False))
    manager = make_manager(h.ledger, h.provider, emit=h.seen.append, config=off)
    fill(h.ledger, 16)  # ~37k tokens, over the 32k window; compaction is off
    h.ledger.append_message(user("next"))
    with pytest.raises(ContextOverflowError) as refused:
        await manager.prepare()
    assert "compaction.enabled" in refused.value.message
    overflow = [(o.kind, o.action) for o in h.of(events.OverflowHappened)]
    assert overflow == [("estimated", "gaveUp")]
    assert h.provider.requests == []


# --- state ---------------------------------------------------------------------------------------


async def test_window_numbers_come_from_the_ledger(h: Harness) -> None:
    fill(h.ledger, 12)
    h.ledger.append_message(user("one"))
    await h.manager.prepare()
    first = next(e for e in h.ledger.tree.entries if isinstance(e, CompactionEntry))
    fill(h.ledger, 12)
    h.ledger.append_message(user("two"))
    view = await h.manager.prepare()
    assert h.manager.window_number(view) == 3
    h.ledger.rewind(first.id)
    assert h.manager.window_number(h.manager.view()) == 2
    other = make_manager(h.ledger, h.provider)
    assert other.window_number(other.view()) == 2


async def test_the_clock_stamps_the_last_call(h: Harness) -> None:
    assert h.manager.cache.last_call_at is None
    h.clock[0] = 1234.5
    h.manager.record_call()
    assert h.manager.cache.last_call_at == 1234.5
    fill(h.ledger, 8)  # ~27k tokens: the cached summary fits beside them
    h.clock[0] = 1294.5  # a minute later: the cache is warm
    await h.manager.compact("manual")
    assert h.manager.cache.last_call_at == 1294.5  # the cached summary read the session's cache
    fill(h.ledger, 16)  # now over the window: only a fresh summary prompt fits
    h.clock[0] = 1354.5
    await h.manager.compact("manual")
    assert h.manager.cache.last_call_at == 1294.5  # a fresh prompt leaves the session's cache alone
    assert decisions(h) == [("compact", "manual"), ("compact", "manual")]
    assert h.provider.shared == ["extend", "none"]


async def test_a_pause_past_the_cache_lifetime_is_known_before_the_next_call(h: Harness) -> None:
    h.manager.record_call("short")
    h.clock[0] += 299
    assert h.manager.cache.cold_pause() is None
    h.clock[0] += 2
    assert h.manager.cache.cold_pause() == (301, 300)
    h.manager.record_call("long")  # an hour now
    h.clock[0] += 1800
    assert h.manager.cache.cold_pause() is None
    h.clock[0] += 1801
    assert h.manager.cache.cold_pause() == (3601, 3600)
    # A manual compaction then asks for its summary without the cold cache's marks.
    fill(h.ledger, 8)
    result = await h.manager.compact("manual")
    assert result.outcome == "compacted"
    assert h.provider.shared == ["none"]
    assert [bool(c.tools) for c in h.provider.requests] == [True]  # the context, uncached


async def test_a_policy_plugs_in_at_the_same_seam(h: Harness) -> None:
    class KeepLastOne:
        name = "last-one"
        def __init__(self) -> None:
            self.seen: list[int] = []

        async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
            self.seen.append(len(view.messages))
            return manager.view_of(view.messages[-1:])

    policy = KeepLastOne()
    h.manager.policy = policy
    fill(h.ledger, 2)
    h.ledger.append_message(user("only me"))
    view = await h.manager.prepare()
    assert policy.seen == [9]
    assert [m.content[0].text for m in view.messages] == ["only me"]  # type: ignore[union-attr]
    assert view.context.system_prompt == SYSTEM and view.context.tools == TOOLS


async def test_an_overflow_compaction_does_not_keep_the_prompt_just_rejected(h: Harness) -> None:
    fill(h.ledger, 1)
    # ~15k tokens by chars/4: it fits, and a compaction would keep it (under the prompt's
    # own budget of 24576 - prefix - 8192) if it were not the prompt just rejected.
    paste = "w" * 60_000
    h.ledger.append_message(user(paste))
    sent = await h.manager.prepare()
    assert decisions(h) == [("send", None)]
    h.provider.density = 2.3  # really ~35k: over the 32k window
    after = await h.manager.recover_overflow(sent, "prompt is too long", rejected=True)
    texts = [b.text for m in after.messages for b in m.content if isinstance(b, TextContent)]
    assert paste not in texts  # summarised (bounded), not resent
    assert estimate_full(after.context) * h.provider.density < SIM_SMALL.context_window


# --- the tool list ---------------------------------------------------------------------------


@dataclass
class ChangingTools:
    """A tool list with a change waiting (as an MCP server's new tool would be): it comes in
    only when a compaction is kept."""

    current: tuple[ToolSpec, ...]
    waiting: tuple[ToolSpec, ...]
    taken: int = 0

    def specs(self) -> tuple[ToolSpec, ...]:
        return self.current

    def after_compaction(self) -> None:
        self.taken += 1
        self.current = self.waiting


async def test_a_kept_compaction_takes_a_waiting_tool_change_in_and_sends_it(
    tmp_path: Path,
) -> None:
    extra = ToolSpec("mcp__fx__extra", "Double a number.", {"type": "object", "properties": {}})
    tools = ChangingTools(TOOLS, (*TOOLS, extra))
    provider = Provider()
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never") as led:
        manager = make_manager(led, provider, tools)
        led.append_message(user("hello"))
        noop = await manager.compact("manual")
        assert noop.outcome == "noop" and tools.taken == 0 and manager.tools == TOOLS
        fill(led, 8)  # ~27k tokens: over the threshold, the cached summary fits
        led.append_message(user("next"))
        view = await manager.prepare()
        # The summary request shared the old prefix; what is sent next has the new list.
        [request] = provider.requests
        assert request.tools == TOOLS
        assert tools.taken == 1
        assert view.context.tools == manager.tools == (*TOOLS, extra)
        assert view.context == manager.view().context
        assert view.tokens == manager.view().tokens
