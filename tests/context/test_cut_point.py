from __future__ import annotations

from agent_server.context.cut_point import find_cut_point
from agent_server.context.projection import is_prompt
from agent_server.context.summary_prompt import note_message
from agent_server.llm.messages import ToolResultMessage, UserMessage
from agent_server.session.entries import TitleEntry

from .builders import assistant, call, compaction, entries_of, result, user


def text(tokens: int) -> str:
    """A text of exactly `tokens` estimated tokens."""
    return "x" * (tokens * 4)


def turn(prompt_tokens: int, *steps: int, answer: int = 10) -> list[object]:
    """A user prompt, one tool round trip per step (result of that many tokens), an answer."""
    messages: list[object] = [user(text(prompt_tokens))]
    for index, size in enumerate(steps):
        call_id = f"c{prompt_tokens}-{index}-{size}"
        messages.append(assistant("", call(call_id, "read", path=f"f{index}")))
        messages.append(result(call_id, text(size)))
    messages.append(assistant(text(answer)))
    return messages


def test_keeps_the_last_two_turns() -> None:
    path = entries_of(*turn(100, 200), *turn(100, 200), *turn(100, 200), *turn(100))
    cut = find_cut_point(path, keep_recent_tokens=8000)
    # turns: [0..3], [4..7], [8..11], [12..13]; the last two start at 8
    assert cut.first_kept_index == 8
    assert cut.first_kept_entry_id == "m8"
    assert cut.turn_start_index is None
    assert [e.id for e in cut.summarize] == [f"m{i}" for i in range(8)]
    assert cut.turn_prefix == ()
    assert [e.id for e in cut.kept] == [f"m{i}" for i in range(8, 14)]
    assert cut.can_compact
    assert not cut.is_split_turn


def test_keep_recent_turns_setting() -> None:
    path = entries_of(*turn(10), *turn(10), *turn(10), *turn(10))
    assert find_cut_point(path, keep_recent_turns=3).first_kept_index == 2
    assert find_cut_point(path, keep_recent_turns=1).first_kept_index == 6



def test_a_prompt_not_answered_yet_is_kept_beside_the_recent_turns() -> None:
    """At a natural break (the compaction runs before a new prompt's first call) the last
    `keep_recent_turns` answered turns stay, as they would in the middle of that turn."""
    path = entries_of(*turn(10), *turn(10), *turn(10), user("next"))
    cut = find_cut_point(path, keep_recent_turns=2)
    assert cut.first_kept_index == 2 and [e.id for e in cut.kept][-1] == "m6"
    assert sum(is_prompt(e.message) for e in cut.kept) == 3
    # Once the prompt has an answer it is a turn like the others.
    answered = entries_of(*turn(10), *turn(10), *turn(10), *turn(10))
    assert find_cut_point(answered, keep_recent_turns=2).first_kept_index == 4


def test_at_a_natural_break_older_finished_turns_fill_the_budget() -> None:
    """At a break every turn is finished: whole turns older than the last `keep_recent_turns`
    stay while the budget holds them (the read an edit was made from, turns back), never the
    window's first; in the middle of a turn only the last `keep_recent_turns` stay."""
    turns = [turn(100, 1000) for _ in range(5)]  # 1.1k tokens each, at 0, 4, 8, 12, 16
    at_break = find_cut_point(
        entries_of(*(m for t in turns for m in t), user("next")),
        keep_recent_tokens=4000, keep_recent_turns=2,
    )
    assert at_break.first_kept_index == 8  # three finished turns fit 4k, not four
    assert sum(is_prompt(e.message) for e in at_break.kept) == 4
    small = [turn(10) for _ in range(5)]  # everything fits: the first turn is still summarised
    all_fit = find_cut_point(entries_of(*(m for t in small for m in t), user("next")))
    assert all_fit.first_kept_index == 2 and all_fit.can_compact
    mid_turn = find_cut_point(
        entries_of(*(m for t in turns for m in t), *turn(100, 100)[:3]),
        keep_recent_tokens=4000, keep_recent_turns=2,
    )
    assert mid_turn.first_kept_index == 16


def test_the_8k_cap_keeps_only_what_fits() -> None:
    # the last turn is 5k, the one before 4k: both together exceed 8k
    path = entries_of(*turn(100, 3800), *turn(100, 4800))
    cut = find_cut_point(path, keep_recent_tokens=8000)
    assert cut.first_kept_index == 4
    assert cut.kept_tokens <= 8000
    # max_kept_tokens lowers the cap further (a small window)
    small = find_cut_point(path, keep_recent_tokens=8000, max_kept_tokens=2000)
    assert small.kept_tokens <= 2000


def test_never_starts_with_a_tool_result_nor_splits_a_call_from_its_result() -> None:
    # one long turn: user, then (assistant call, result) x 5, answer; each result 3k
    path = entries_of(*turn(10, 3000, 3000, 3000, 3000, 3000))
    cut = find_cut_point(path, keep_recent_tokens=8000)
    assert cut.is_split_turn
    assert cut.turn_start_index == 0
    kept = [e.message for e in cut.kept]
    assert not isinstance(kept[0], ToolResultMessage)
    # the kept part holds each kept call with its result
    calls = {c.id for m in kept if hasattr(m, "tool_calls") for c in m.tool_calls}  # type: ignore[union-attr]
    results = {m.tool_call_id for m in kept if isinstance(m, ToolResultMessage)}
    assert calls == results
    assert cut.kept_tokens <= 8000
    # the turn's early part is summarised separately; there was nothing before the turn
    assert cut.summarize == ()
    assert [e.id for e in cut.turn_prefix] == [f"m{i}" for i in range(cut.first_kept_index or 0)]
    assert cut.can_compact


def test_split_turn_after_earlier_turns() -> None:
    path = entries_of(*turn(100), *turn(10, 5000, 5000, 100))
    cut = find_cut_point(path, keep_recent_tokens=8000)
    assert cut.turn_start_index == 2
    assert [e.id for e in cut.summarize] == ["m0", "m1"]
    assert [e.id for e in cut.turn_prefix] == ["m2", "m3", "m4"]
    assert cut.first_kept_entry_id == "m5"  # the second call, with its 5k result


def test_nothing_fits_keeps_nothing() -> None:
    path = entries_of(user("go"), assistant("", call("c1")), result("c1", text(20_000)))
    cut = find_cut_point(path, keep_recent_tokens=8000)
    assert cut.first_kept_index is None
    assert cut.first_kept_entry_id is None
    assert [e.id for e in cut.summarize] == ["m0", "m1", "m2"]
    assert cut.kept == ()
    assert cut.can_compact


def test_a_large_last_step_is_kept_whole_when_the_window_allows() -> None:
    # A 20k-token read right before the window filled: too big for the 8k tail, but the model
    # asked for it one step ago; losing it would make it read the file again.
    path = entries_of(
        user("earlier"), assistant("done"),
        user("go"), assistant("", call("c1")), result("c1", text(20_000)),
    )
    cut = find_cut_point(path, keep_recent_tokens=8000, last_step_tokens=40_000)
    assert cut.first_kept_entry_id == "m3"  # the assistant message: a safe start
    assert [e.id for e in cut.kept] == ["m3", "m4"]
    assert [e.id for e in cut.turn_prefix] == ["m2"]  # the turn's prompt, summarised apart
    assert [e.id for e in cut.summarize] == ["m0", "m1"]
    too_big = find_cut_point(path, keep_recent_tokens=8000, last_step_tokens=15_000)
    assert too_big.kept == ()


def test_nothing_to_summarise() -> None:
    short = entries_of(*turn(10), *turn(10))
    cut = find_cut_point(short)
    assert cut.first_kept_index == 0
    assert not cut.can_compact
    empty = find_cut_point([])
    assert empty.first_kept_index is None
    assert not empty.can_compact


def test_the_window_starts_at_the_previous_first_kept_entry() -> None:
    path = entries_of(*turn(10), *turn(10), *turn(10), *turn(10), *turn(10))
    path.insert(6, compaction("c1", "m5", first_kept="m4"))
    path[7] = path[7].__class__(path[7].id, "c1", path[7].timestamp, path[7].message)
    cut = find_cut_point(path)
    assert cut.previous is not None
    assert cut.previous.id == "c1"
    # summarised: only what came after the previous summary's coverage (from m4 on)
    # (two-message turns: m4-m5 | m6-m7 | m8-m9; the last two are kept)
    assert [e.id for e in cut.summarize] == ["m4", "m5"]
    assert cut.first_kept_entry_id == "m6"
    # indices refer to the list given (the compaction entry sits at 6)
    assert cut.first_kept_index == 7
    assert path[cut.first_kept_index].id == "m6"


def test_a_window_opening_inside_a_split_turn() -> None:
    # a previous compaction kept the tail of a turn: the window starts at an assistant
    path = entries_of(
        *turn(10, 100, 100)[3:],  # assistant, result, answer
        *turn(10),
        *turn(10),
    )
    cut = find_cut_point(path, keep_recent_turns=2)
    assert [e.id for e in cut.summarize] == ["m0", "m1", "m2"]
    cut = find_cut_point(path, keep_recent_turns=3)
    assert not cut.can_compact


def test_non_message_entries_are_ignored() -> None:
    path = entries_of(*turn(10), *turn(10), *turn(10))
    path.insert(3, TitleEntry("t1", "m2", "", "title"))
    cut = find_cut_point(path)
    assert all(not isinstance(e, TitleEntry) for e in cut.summarize)
    assert cut.first_kept_entry_id == "m2"
    assert isinstance(cut.kept[0].message, UserMessage)


def test_a_prompt_awaiting_its_answer_is_its_turns_last_step() -> None:
    # A 12k-token prompt after a full history: too big for the 8k tail, but the model must
    # read it verbatim to answer it.
    path = entries_of(user("earlier"), assistant("done"), user(text(12_000)))
    cut = find_cut_point(path, keep_recent_tokens=8000, last_step_tokens=20_000)
    assert [e.id for e in cut.kept] == ["m2"]
    assert [e.id for e in cut.summarize] == ["m0", "m1"]
    assert not cut.is_split_turn
    assert find_cut_point(path, keep_recent_tokens=8000, last_step_tokens=10_000).kept == ()
    # A prompt may have a budget of its own, larger than a step's.
    own = find_cut_point(
        path, keep_recent_tokens=8000, last_step_tokens=10_000, prompt_tokens=12_000
    )
    assert [e.id for e in own.kept] == ["m2"]


def test_notes_belong_to_the_turn_of_the_prompt_they_precede() -> None:
    note = note_message("externalEdit", "a.py changed on disk")
    path = entries_of(
        user("one"), assistant("", call("c1")), result("c1", "r"), note, assistant("ok"),
        note, user("two"), assistant("done two"),
    )
    cut = find_cut_point(path, keep_recent_tokens=8000, keep_recent_turns=1)
    # The mid-turn note is no turn of its own; the note before "two" starts that turn.
    assert [e.id for e in cut.kept] == ["m5", "m6", "m7"]
    assert [e.id for e in cut.summarize] == ["m0", "m1", "m2", "m3", "m4"]
