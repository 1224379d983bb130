"""Property tests of the context invariants over random sessions.

A session is a random sequence of operations on a real ledger: user prompts, assistant
messages with 0-3 tool calls (some failed, aborted or cut off by the window), tool results
(some missing, some orphaned), editor notes, compactions planned by find_cut_point, rewinds to
any entry (some with a summary of the branch left), title and model changes, and reloads from
disk. After every operation the projection must be
a valid request, and the same whichever way it is computed.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent_server.context.carried import (
    CarriedBudgets,
    carry,
    current_pins,
    current_plan,
    model_words,
    user_text,
)
from agent_server.context.cut_point import CutPoint, find_cut_point
from agent_server.context.decision import decide
from agent_server.context.estimate import (
    estimate_context_tokens,
    estimate_text_tokens,
    estimate_weighted_tokens,
)
from agent_server.context.projection import (
    Projection,
    build_compacted_messages,
    compaction_window,
    is_prompt,
    project,
)
from agent_server.context.summary_prompt import (
    MAX_TEXT_CHARS,
    SUMMARY_PREFIX,
    SUMMARY_REQUEST_MARKER,
    build_summary_prompt,
    failure_line,
    note_message,
    serialize_message,
)
from agent_server.context.trigger import (
    CompactionSettings,
    StepPosition,
    compaction_threshold,
    leaves_no_summary_room,
    max_kept_tokens,
    summary_room,
    window_limit,
)
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_to_json,
)
from agent_server.llm.models import BUILTIN_MODELS
from agent_server.session.entries import (
    Carried,
    CompactionEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    PinEntry,
    PlanEntry,
    PlanItem,
    TitleEntry,
)
from agent_server.session.ledger import Ledger

KINDS = (
    ["turn"] * 3
    + ["user"] * 3
    + ["assistant"] * 4
    + ["results"] * 4
    + ["compact"] * 2
    + ["rewind", "reload", "meta", "note", "pin", "plan"]
)
OPERATIONS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6), st.integers(0, 10**6)),
    min_size=5,
    max_size=60,
)
BUILTIN_MODELS_BY_ID = {model.id: model for model in BUILTIN_MODELS}
PROPERTY_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- checks ---------------------------------------------------------------------------------


def assert_valid_request(messages: Sequence[Message]) -> None:
    """No leading or orphaned tool result, no unanswered call (except a running turn's), no
    two user messages in a row."""
    assert not messages or not isinstance(messages[0], ToolResultMessage)
    for index, message in enumerate(messages):
        if index and isinstance(message, UserMessage):
            assert not isinstance(messages[index - 1], UserMessage), "two user messages in a row"
        if isinstance(message, ToolResultMessage):
            # walk back over the run of results to the assistant that owns it
            owner = index - 1
            while owner >= 0 and isinstance(messages[owner], ToolResultMessage):
                owner -= 1
            assert owner >= 0, "orphaned tool result"
            assistant = messages[owner]
            assert isinstance(assistant, AssistantMessage), "tool result after a user message"
            assert message.tool_call_id in {c.id for c in assistant.tool_calls}, "orphaned result"
            earlier = messages[owner + 1 : index]
            assert message.tool_call_id not in {
                m.tool_call_id for m in earlier if isinstance(m, ToolResultMessage)
            }, "duplicate result"
        if isinstance(message, AssistantMessage) and message.tool_calls:
            end = index + 1
            while end < len(messages) and isinstance(messages[end], ToolResultMessage):
                end += 1
            answered = {
                m.tool_call_id
                for m in messages[index + 1 : end]
                if isinstance(m, ToolResultMessage)
            }
            if end < len(messages):  # something follows: every call must have its answer
                assert {c.id for c in message.tool_calls} <= answered, "unanswered tool call"


def as_json(messages: Sequence[Message]) -> list[str]:
    return [json.dumps(message_to_json(m), ensure_ascii=False) for m in messages]


def check_ledger(ledger: Ledger) -> Projection:
    tail = ledger.tree.projection_entries()
    branch = ledger.tree.branch()
    assert branch[len(branch) - len(tail) :] == tail  # a suffix of the branch
    projection = project(tail)
    assert projection == project(branch)
    assert_valid_request(projection.messages)

    compactions = [e for e in branch if isinstance(e, CompactionEntry)]
    if compactions:
        assert projection.compaction == compactions[-1]
        first = projection.messages[0]
        assert isinstance(first, UserMessage)
        block = first.content[0]
        assert isinstance(block, TextContent)
        assert block.text.startswith(SUMMARY_PREFIX)
        assert compactions[-1].summary in block.text
        # before fresh_from: only the summary and kept entries
        window = compaction_window(tail)
        kept_ids = {e.id for _, e in window.kept}
        for entry_id in projection.entry_ids[: projection.fresh_from]:
            assert entry_id is None or entry_id in kept_ids
    else:
        assert projection.compaction is None
        assert projection.fresh_from == 0

    estimate = estimate_context_tokens(
        Context("system prompt", (), projection.messages), fresh_from=projection.fresh_from
    )
    assert estimate.tokens >= estimate.full_estimate
    if estimate.last_usage_index is not None:
        assert estimate.last_usage_index >= projection.fresh_from
    return projection


def head_text(projection: Projection) -> str:
    first = projection.messages[0]
    assert isinstance(first, UserMessage) and isinstance(first.content[0], TextContent)
    return first.content[0].text


def check_carried(
    entries: Sequence[Entry], cut: CutPoint, carried: Carried, budgets: CarriedBudgets
) -> None:
    """Budgets kept, the latest request always there (carried or kept), nothing said twice,
    the pins in force all carried."""
    words = carried.user_messages
    assert sum(estimate_text_tokens(text) for text in words) <= budgets.user_tokens
    lines = [estimate_text_tokens(failure_line(f)) for f in carried.failures]
    assert sum(lines) <= budgets.failure_tokens
    assert len({(f.call, f.error) for f in carried.failures}) == len(carried.failures)
    kept = [user_text(e.message) for e in cut.kept
            if isinstance(e.message, UserMessage) and is_prompt(e.message)]
    assert not set(words) & set(kept), "a prompt kept verbatim is carried too"
    assert len(set(words)) == len(words), "a prompt carried twice"
    summarized = [user_text(e.message) for e in (*cut.summarize, *cut.turn_prefix)
                  if isinstance(e.message, UserMessage) and is_prompt(e.message)]
    latest = next((text for text in reversed([*summarized, *kept]) if text), None)
    if latest is not None and latest not in kept:
        assert words, "the latest request is lost"
        assert words[-1] == latest or (
            "characters cut here" in words[-1] and words[-1][:20] == latest[:20]
        )
    assert carried.pins == current_pins(entries)
    # The model's words: within their budget, none from the kept tail, the newest of the
    # summarised part carried (cut if it must be) whenever there is a budget.
    said = carried.said
    assert sum(estimate_text_tokens(text) for text in said) <= budgets.said_tokens
    summarized_said = model_words([e.message for e in (*cut.summarize, *cut.turn_prefix)])
    previous = compaction_window(entries).compaction
    carried_before = previous.carried.said if previous and previous.carried else ()
    kept_said = set(model_words([e.message for e in cut.kept])) - {*summarized_said,
                                                                   *carried_before}
    assert not set(said) & kept_said, "a text kept verbatim is carried too"
    if summarized_said and budgets.said_tokens:
        newest = summarized_said[-1]
        assert said[-1] == newest or (
            "characters cut here" in said[-1] and said[-1][:20] == newest[:20]
        )
    elif not budgets.said_tokens:
        assert not said
    # The commands that worked: within their budget, each command and ending once, however
    # long each run took.
    worked = carried.worked
    event(f"commands that worked carried: {min(len(worked), 3)}")
    assert sum(estimate_text_tokens(command) + 2 for command in worked) <= budgets.worked_tokens
    untimed = [re.sub(r" in \d+\.\d+s$", "", command) for command in worked]
    assert len(set(untimed)) == len(untimed), "a command and its ending carried twice"


def check_cut(entries: Sequence[Entry], cut: CutPoint, budget: int, turns: int) -> None:
    window = [e for _, e in compaction_window(entries).messages]
    assert [*cut.summarize, *cut.turn_prefix, *cut.kept] == window
    if cut.kept:
        first = cut.kept[0]
        assert cut.first_kept_entry_id == first.id
        assert cut.first_kept_index is not None
        assert entries[cut.first_kept_index].id == first.id  # a rewind's summary: its entry
        assert not isinstance(first.message, ToolResultMessage)
        # Counted the way the trigger counts (weighted by kind), not chars/4.
        assert cut.kept_tokens == sum(estimate_weighted_tokens(e.message) for e in cut.kept)
        assert cut.kept_tokens <= budget
        # A prompt not answered yet is kept beside the last `turns` answered turns, and older
        # finished turns while the budget holds them, the window's first always summarised.
        last_prompt = max(i for i, e in enumerate(window) if is_prompt(e.message)) \
            if any(is_prompt(e.message) for e in window) else len(window)
        pending = not any(isinstance(e.message, AssistantMessage) for e in window[last_prompt:])
        kept_prompts = sum(is_prompt(e.message) for e in cut.kept)
        assert kept_prompts <= turns + pending or (pending and cut.summarize)
        # a note right before a prompt stays with it
        start = len(window) - len(cut.kept)
        if start and is_prompt(window[start].message):
            before = window[start - 1].message
            assert not (isinstance(before, UserMessage) and before.note is not None)
        # the cut never falls between an assistant's tool calls and the run of results
        # right after it
        start = len(window) - len(cut.kept)
        if isinstance(window[start].message, ToolResultMessage):
            raise AssertionError("kept tail starts inside a run of tool results")
    else:
        assert cut.first_kept_index is None
    if cut.is_split_turn:
        assert cut.turn_prefix
        assert isinstance(cut.kept[0].message, AssistantMessage)
        # one turn: its notes, then its one prompt (or none: a turn a compaction split)
        prompts = [i for i, e in enumerate(cut.turn_prefix) if is_prompt(e.message)]
        assert len(prompts) <= 1
        assert all(
            isinstance(e.message, UserMessage) for e in cut.turn_prefix[: prompts[0] if prompts else 0]
        )


# --- the random session ---------------------------------------------------------------------


class Session:
    def __init__(self, directory: Path) -> None:
        self.path = directory / "s.jsonl"
        self.ledger = Ledger.create(self.path, session_id="s", workspace="/w", fsync="never")
        self.counter = 0
        self.head: tuple[str, str] | None = None  # (compaction id, the projection's head)

    def pending_calls(self) -> list[ToolCall]:
        answered: set[str] = set()
        for entry in reversed(self.ledger.tree.projection_entries()):
            if not isinstance(entry, MessageEntry):
                continue
            message = entry.message
            if isinstance(message, ToolResultMessage):
                answered.add(message.tool_call_id)
                continue
            if isinstance(message, AssistantMessage):
                return [c for c in message.tool_calls if c.id not in answered]
            return []
        return []

    def run(self, kind: str, a: int, b: int) -> None:
        ledger = self.ledger
        self.counter += 1
        if kind == "turn":  # a whole well-formed turn: prompt, tool round trips, answer
            if b % 5 == 0:  # an editor note before the prompt
                ledger.append_message(note_message("externalEdit", f"f{a % 3} changed"))
            ledger.append_message(UserMessage.of_text(f"prompt {self.counter} " + "u" * (a % 400)))
            for step in range(a % 6):
                call = ToolCall(f"call{self.counter}_{step}", "read", {"path": f"f{step}"})
                ledger.append_message(
                    AssistantMessage(
                        (TextContent("step"), call),
                        "toolUse",
                        Usage(input=b % 40_000, output=50),
                    )
                )
                size = (b >> step) % 12_000
                ledger.append_message(
                    ToolResultMessage(call.id, "read", (TextContent("r" * size),))
                )
            ledger.append_message(AssistantMessage((TextContent("done"),), "stop", Usage(input=b)))
        elif kind == "user":
            ledger.append_message(UserMessage.of_text(f"prompt {self.counter} " + "u" * (a % 4000)))
        elif kind == "assistant":
            calls = tuple(
                ToolCall(f"call{self.counter}_{i}", ("bash", "read", "edit")[i],
                         {"command": f"make t{a % 3}"} if i == 0 else {"path": f"f{i}"})
                for i in range(a % 4)
            )
            variant = b % 8
            stop = "toolUse" if calls else "stop"
            usage: Usage | None = Usage(input=b % 50_000, output=a % 3000)
            if variant == 6:
                stop, usage = "error", None
            elif variant == 5:
                stop = "aborted"
            elif variant == 7:
                stop = "contextOverflow"
            text = f"answer {self.counter} " + "a" * (b % 3000)
            ledger.append_message(
                AssistantMessage(content=(TextContent(text), *calls), stop_reason=stop, usage=usage)  # type: ignore[arg-type]
            )
        elif kind == "results":
            pending = self.pending_calls()
            if not pending:
                if a % 4 == 0:  # an orphaned result, as a lost line could leave
                    ledger.append_message(
                        ToolResultMessage(f"ghost{self.counter}", "read", (TextContent("boo"),))
                    )
                return
            for call in pending[: 1 + a % len(pending)]:
                failed = b % 3 == 0
                text = f"Error: boom {a % 7}\nExit code 1." if failed else "r" * (b % 30_000)
                # A command's ending as the bash tool notes it: a count, and a time that
                # varies from run to run.
                ending = {"ending": f"{b % 3} passed in 0.{a % 10}s"}
                ledger.append_message(
                    ToolResultMessage(call.id, call.name, (TextContent(text),), is_error=failed,
                                      details=ending if call.name == "bash" else None)
                )
        elif kind == "compact":
            self.compact(keep=a % 12_000, turns=1 + b % 3)
        elif kind == "rewind":
            entries = ledger.tree.entries
            summary = f"branch left {self.counter}" if b % 3 == 0 else None
            if not entries or a % 11 == 0:
                ledger.rewind(None, summary=summary)
            else:
                ledger.rewind(entries[a % len(entries)].id, summary=summary)
        elif kind == "note":  # the editor's note: after results, or anywhere
            ledger.append_message(note_message("externalEdit", f"f{a % 3} changed " + "n" * (b % 3000)))
        elif kind == "reload":
            self.reload()
        elif kind == "pin":
            pins = current_pins(ledger.tree.projection_entries())
            if pins and a % 3 == 0:
                gone = pins[b % len(pins)]
                ledger.add(PinEntry, gone.id, "remove", gone.kind, gone.text, "user")
            else:
                ledger.add(PinEntry, f"pin{self.counter}", "add", "rule", f"rule {a}", "model")
        elif kind == "plan":
            ledger.add(
                PlanEntry,
                tuple(PlanItem(f"step {i}", "pending") for i in range(a % 4))
            )
        elif a % 2:
            ledger.add(TitleEntry, f"title {self.counter}")
        else:
            ledger.add(ModelChangeEntry, "sim", f"model-{self.counter}")

    def compact(self, *, keep: int, turns: int) -> None:
        entries = self.ledger.tree.projection_entries()
        cut = find_cut_point(entries, keep_recent_tokens=keep, keep_recent_turns=turns)
        check_cut(entries, cut, keep, turns)
        budgets = CarriedBudgets(user_tokens=100 + keep // 4, failure_tokens=100 + turns * 50,
                                 worked_tokens=40 + keep // 16,
                                 said_tokens=60 + keep // 8 if turns > 1 else 0)
        if not cut.can_compact:
            event("compaction: nothing to summarise")
            return
        event(
            "compaction: split turn"
            if cut.is_split_turn
            else "compaction: kept nothing"
            if not cut.kept
            else "compaction: whole turns"
        )
        summary = f"summary {self.counter}"
        split = f"turn prefix {self.counter}" if cut.is_split_turn else None
        carried = carry(entries, (*cut.summarize, *cut.turn_prefix), cut.kept, budgets)
        check_carried(entries, cut, carried, budgets)
        entry = self.ledger.add(
            CompactionEntry,
            summary=summary,
            first_kept_entry_id=cut.first_kept_entry_id,
            tokens_before=cut.kept_tokens + cut.summarize_tokens,
            tokens_after=None,
            reason="threshold",
            split_turn_summary=split,
            carried=carried,
        )
        # the projection is the summary (and what it carries) plus exactly the kept entries
        projection = project(self.ledger.tree.projection_entries())
        kept_alone = project(list(cut.kept)).messages
        expected = build_compacted_messages(
            summary, kept_alone, split_turn_summary=split, carried=carried
        )
        assert list(projection.messages) == expected
        assert current_pins(self.ledger.tree.projection_entries()) == current_pins(entries)
        assert current_plan(self.ledger.tree.projection_entries()) == current_plan(entries)
        self.head = (entry.id, head_text(projection))
        ids = [i for i in projection.entry_ids if i is not None]
        assert set(ids) <= {e.id for e in cut.kept}
        if cut.kept:
            assert ids[0] == cut.first_kept_entry_id
        assert projection.fresh_from == len(projection.messages)

    def reload(self) -> None:
        before = project(self.ledger.tree.projection_entries())
        entries = list(self.ledger.tree.entries)
        leaf = self.ledger.leaf_id
        left_running = unanswered_at_end(self.ledger.tree.branch())
        self.ledger.close()
        self.ledger = Ledger.open(self.path, fsync="never")
        report = self.ledger.load_report
        assert not report.issues
        # Reopening answers the calls the branch ended with (as a crash would leave them)
        # by appending aborted results: append-only, and the prefix of the request holds.
        assert report.aborted_tool_calls == left_running
        reloaded = list(self.ledger.tree.entries)
        assert reloaded[: len(entries)] == entries
        added = reloaded[len(entries) :]
        assert [e.message.tool_call_id for e in added] == list(left_running)  # type: ignore[attr-defined]
        assert all(isinstance(e, MessageEntry) and e.message.is_error for e in added)  # type: ignore[union-attr]
        after = project(self.ledger.tree.projection_entries())
        if not added:
            assert self.ledger.leaf_id == leaf
            assert after == before
        assert as_json(after.messages[: len(before.messages)]) == as_json(before.messages)
        assert len(after.messages) == len(before.messages) + len(added)


def unanswered_at_end(branch: Sequence[Entry]) -> tuple[str, ...]:
    """The tool calls of the assistant message that ends the branch (before any results to
    it) that have no result."""
    answered: set[str] = set()
    for entry in reversed(branch):
        if not isinstance(entry, MessageEntry):
            return ()
        if isinstance(entry.message, ToolResultMessage):
            answered.add(entry.message.tool_call_id)
            continue
        if isinstance(entry.message, AssistantMessage):
            return tuple(c.id for c in entry.message.tool_calls if c.id not in answered)
        return ()
    return ()


@PROPERTY_SETTINGS
@given(OPERATIONS)
def test_random_sessions_always_project_to_valid_requests(
    operations: list[tuple[str, int, int]],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        session = Session(Path(directory))
        try:
            for kind, a, b in operations:
                session.run(kind, a, b)
                projection = check_ledger(session.ledger)
                if session.head is not None and projection.compaction is not None and (
                    projection.compaction.id == session.head[0]
                ):  # the summary and what it carries stay byte for byte the same
                    assert head_text(projection) == session.head[1]
            session.reload()
            check_ledger(session.ledger)
        finally:
            session.ledger.close()


# --- cut points over random windows -----------------------------------------------------------

MESSAGE = st.one_of(
    st.tuples(st.just("user"), st.integers(0, 20_000)),
    st.tuples(st.just("assistant"), st.integers(0, 3), st.integers(0, 8000)),
    st.tuples(st.just("result"), st.integers(0, 40_000)),
)


def build_window(spec: list[tuple[object, ...]]) -> list[MessageEntry]:
    entries: list[MessageEntry] = []
    last_calls: list[str] = []
    for index, item in enumerate(spec):
        message: Message
        if item[0] == "user":
            message = UserMessage.of_text("u" * int(item[1]))  # type: ignore[call-overload]
        elif item[0] == "assistant":
            calls = tuple(ToolCall(f"c{index}_{i}", "read", {}) for i in range(int(item[1])))  # type: ignore[call-overload]
            last_calls = [c.id for c in calls]
            message = AssistantMessage(
                (TextContent("a" * int(item[2])), *calls),  # type: ignore[call-overload]
                "toolUse" if calls else "stop",
            )
        else:
            call_id = last_calls.pop(0) if last_calls else f"orphan{index}"
            message = ToolResultMessage(call_id, "read", (TextContent("r" * int(item[1])),))  # type: ignore[call-overload]
        parent = entries[-1].id if entries else None
        entries.append(MessageEntry(f"e{index}", parent, "", message))
    return entries


@settings(max_examples=200, deadline=None)
@given(
    st.lists(MESSAGE, max_size=40),
    st.integers(0, 12_000),
    st.integers(1, 3),
    st.one_of(st.none(), st.integers(0, 12_000)),
)
def test_cut_points_keep_tool_pairs_and_budgets(
    spec: list[tuple[object, ...]], keep: int, turns: int, cap: int | None
) -> None:
    entries = build_window(spec)
    cut = find_cut_point(
        entries, keep_recent_tokens=keep, keep_recent_turns=turns, max_kept_tokens=cap
    )
    check_cut(entries, cut, keep if cap is None else min(keep, cap), turns)
    # compacting there gives a valid request
    if cut.can_compact:
        messages = build_compacted_messages("S", project(list(cut.kept)).messages)
        assert_valid_request(messages)


# --- decisions and bounded summary prompts -------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(
    st.integers(0, 400_000),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 19_000)),
    st.sampled_from(("turn", "break", "requested", "loop")),
    st.integers(0, 60_000),
    st.integers(0, 20_000),
    st.one_of(st.none(), st.floats(0.05, 1.0), st.integers(2048, 300_000)),
    st.sampled_from(("sim-small", "sim-large")),
    st.one_of(st.none(), st.integers(0, 400_000)),
)
def test_the_decision_compacts_exactly_when_a_rule_says_so(
    tokens: int,
    enabled: bool,
    truncated: bool,
    rejected: bool,
    reserve: int | None,
    position: StepPosition,
    step: int,
    answer: int,
    threshold_setting: float | None,
    model_id: str,
    compacted_to: int | None,
) -> None:
    model = BUILTIN_MODELS_BY_ID[model_id]
    if reserve is not None and reserve >= model.context_window:
        reserve = None
    compaction = CompactionSettings(
        enabled=enabled, reserve_tokens=reserve, threshold=threshold_setting
    )
    decision = decide(
        tokens,
        model,
        compaction,
        truncated=truncated,
        holds_rejected=rejected,
        position=position,
        next_step_tokens=step,
        answer_tokens=answer,
        compacted_to=compacted_to,
    )
    threshold = compaction_threshold(model, compaction)
    if compacted_to is None or compacted_to <= threshold:  # the normal case: as without one
        assert decision == decide(
            tokens, model, compaction, truncated=truncated, holds_rejected=rejected,
            position=position, next_step_tokens=step, answer_tokens=answer,
        )
    left_above = (  # past the threshold for what the last compaction could not remove
        compacted_to is not None
        and compacted_to > threshold
        and tokens <= window_limit(model, compaction)
        and tokens - compacted_to < max_kept_tokens(model, compaction)
    )
    window = model.context_window
    assert (decision.tokens, decision.threshold, decision.window) == (tokens, threshold, window)
    assert threshold <= window_limit(model, compaction)
    early = leaves_no_summary_room(tokens, step, model, compaction)
    past = (tokens > threshold and not left_above) or early
    waits = (  # a step like the last one counted twice (can_wait_for_break)
        position == "loop"
        and not early
        and tokens + 2 * (step + answer) + summary_room(model) <= window
    )
    requested = position == "requested" and tokens > 0.5 * threshold
    should = enabled and (truncated or rejected or (past and not waits) or requested)
    assert (decision.action == "compact") == should
    # Waiting (invariants 3, 4 and 8 hold): only past the threshold in the middle of a loop,
    # never for a cut-off answer or a rejected context, and only while a step like the last
    # one leaves the summary its room: the next request stays inside the window.
    assert (decision.action == "wait") == (
        enabled and not truncated and not rejected and past and waits
    )
    if decision.action == "wait":
        assert tokens + step + answer + summary_room(model) <= window
        assert decision.reason == "threshold"
    assert (decision.reason is None) == (decision.action == "send")
    if should:
        expected = (
            "truncation"
            if truncated
            else "overflow"
            if rejected
            else "threshold"
            if past
            else "requested"
        )
        assert decision.reason == expected


PROSE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
SERIALISED = st.lists(
    st.one_of(
        st.builds(lambda t, n: UserMessage.of_text(t * n), PROSE, st.integers(1, 4000)),
        st.builds(
            lambda t, n: AssistantMessage((TextContent(t * n),), "stop"), PROSE, st.integers(1, 4000)
        ),
        st.builds(
            lambda t, n: ToolResultMessage("c", "read", (TextContent(t * n),)),
            PROSE,
            st.integers(1, 4000),
        ),
        st.builds(lambda t: note_message("externalEdit", t or "x"), PROSE),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(SERIALISED, st.integers(1500, 60_000), st.one_of(st.none(), PROSE))
def test_a_fresh_summary_prompt_stays_within_its_budget_and_keeps_the_newest(
    messages: list[Message], budget: int, previous: str | None
) -> None:
    prompt = build_summary_prompt(messages, previous_summary=previous, max_tokens=budget)
    assert len(prompt) <= budget * 4
    assert prompt.startswith(SUMMARY_REQUEST_MARKER)
    newest = serialize_message(messages[-1])
    if newest and len(newest[0]) < 300:
        assert newest[0] in prompt  # the newest message is never the one left out
    for message in messages:
        for line in serialize_message(message):
            assert len(line) <= MAX_TEXT_CHARS + 200  # every part bounded
