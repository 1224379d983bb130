from __future__ import annotations

from agent_server.context.projection import (
    INTERRUPTED_TOOL_RESULT,
    build_compacted_messages,
    project,
)
from agent_server.context.summary_prompt import (
    BRANCH_SUMMARY_PREFIX,
    SPLIT_TURN_HEADING,
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    SUMMARY_PREFIX,
    note_message,
    summary_message_text,
)
from agent_server.llm.messages import TextContent, ToolResultMessage, UserMessage
from agent_server.session.entries import BranchEntry, ModelChangeEntry, TitleEntry, UnknownEntry

from .builders import assistant, call, compaction, entries_of, result, user


def summary_text(summary: str = "SUMMARY", split: str | None = None) -> str:
    return summary_message_text(summary, split)


def test_summary_text_shape() -> None:
    text = summary_text("S")
    assert text == f"{SUMMARY_PREFIX}\n\n{SUMMARY_OPEN}\nS\n{SUMMARY_CLOSE}"
    with_split = summary_text("S", "early part")
    assert with_split.index("S") < with_split.index(SPLIT_TURN_HEADING)
    assert "early part" in with_split
    assert with_split.endswith(SUMMARY_CLOSE)


def test_without_compaction_every_message_on_the_path() -> None:
    path = entries_of(user("a"), assistant("b"), user("c"))
    projection = project(path)
    assert projection.messages == tuple(e.message for e in path)
    assert projection.entry_ids == ("m0", "m1", "m2")
    assert projection.compaction is None
    assert projection.fresh_from == 0


def test_summary_merges_into_a_leading_user_message() -> None:
    path = entries_of(user("old"), assistant("old answer"), user("kept"), assistant("kept answer"))
    path.append(compaction("c1", "m3", first_kept="m2"))
    projection = project(path)
    first = projection.messages[0]
    assert isinstance(first, UserMessage)
    assert first.content == (TextContent(summary_text()), TextContent("kept"))
    assert projection.messages[1:] == (assistant("kept answer"),)
    assert projection.entry_ids == ("m2", "m3")
    assert projection.fresh_from == 2  # nothing after the compaction yet
    assert projection.message_index("m3") == 1
    assert projection.count_from("m2") == 2
    assert projection.count_from(None) == 0
    assert projection.count_from("m0") == 0  # summarised: not in the projection


def test_summary_stands_alone_before_an_assistant_message() -> None:
    path = entries_of(
        user("go"),
        assistant("", call("c1")),
        result("c1", "r1"),
        assistant("", call("c2")),
        result("c2", "r2"),
    )
    path.append(compaction("c", "m4", first_kept="m3", split="asked to go; read c1"))
    path += entries_of(assistant("done"), start=5)
    path[-1] = path[-1].__class__("m5", "c", "", path[-1].message)
    projection = project(path)
    assert projection.messages[0] == UserMessage(
        (TextContent(summary_text("SUMMARY", "asked to go; read c1")),)
    )
    assert projection.entry_ids == (None, "m3", "m4", "m5")
    assert projection.fresh_from == 3


def test_nothing_kept() -> None:
    path = entries_of(user("a"), assistant("b"))
    path.append(compaction("c1", "m1", first_kept=None))
    assert project(path).messages == (UserMessage((TextContent(summary_text()),)),)
    path += [e.__class__("m9", "c1", "", user("next")) for e in entries_of(user("next"))]
    projection = project(path)
    assert projection.messages == (UserMessage((TextContent(summary_text()), TextContent("next"))),)
    assert projection.fresh_from == 0  # the merged message holds the fresh prompt


def test_the_latest_compaction_wins() -> None:
    path = entries_of(user("1"), assistant("1"), user("2"), assistant("2"))
    path.insert(2, compaction("c1", "m1", first_kept="m0", summary="FIRST"))
    path.append(compaction("c2", "m3", first_kept="m2", summary="SECOND"))
    projection = project(path)
    text = projection.messages[0].content[0].text  # type: ignore[union-attr]
    assert "SECOND" in text
    assert "FIRST" not in text
    assert projection.entry_ids == ("m2", "m3")


def test_non_message_entries_contribute_nothing() -> None:
    path = entries_of(user("a"), assistant("b"))
    path.insert(1, TitleEntry("t", "m0", "", "title"))
    path.insert(1, ModelChangeEntry("mc", "m0", "", "p", "m"))
    path.insert(1, BranchEntry("b", "m0", "", "m0"))
    path.insert(1, UnknownEntry({"type": "x", "id": "u", "parentId": "m0"}))
    assert project(path).messages == (user("a"), assistant("b"))


def test_orphaned_tool_results_are_dropped() -> None:
    path = entries_of(
        user("a"),
        result("ghost", "boo"),
        assistant("b", call("c1")),
        result("c1", "r"),
        result("c1", "dup"),
        result("c9", "wrong"),
    )
    projection = project(path)
    assert projection.messages == (user("a"), assistant("b", call("c1")), result("c1", "r"))


def test_interrupted_tool_calls_get_a_synthetic_result() -> None:
    path = entries_of(
        user("a"),
        assistant("", call("c1", "read"), call("c2", "bash")),
        result("c1", "r1"),
        user("never mind"),
    )
    projection = project(path)
    synthetic = projection.messages[3]
    assert isinstance(synthetic, ToolResultMessage)
    assert (synthetic.tool_call_id, synthetic.tool_name, synthetic.is_error) == ("c2", "bash", True)
    assert synthetic.content == (TextContent(INTERRUPTED_TOOL_RESULT),)
    assert projection.entry_ids == ("m0", "m1", "m2", None, "m3")


def test_calls_of_the_final_message_are_left_to_the_running_turn() -> None:
    path = entries_of(user("a"), assistant("", call("c1"), call("c2")), result("c1", "r1"))
    assert project(path).messages == tuple(e.message for e in path)


def test_consecutive_user_messages_are_merged() -> None:
    path = entries_of(user("a"), user("b"), assistant("x"), user("c"), user("d"), user("e"))
    projection = project(path)
    assert projection.messages == (
        UserMessage((TextContent("a"), TextContent("b"))),
        assistant("x"),
        UserMessage((TextContent("c"), TextContent("d"), TextContent("e"))),
    )
    assert projection.entry_ids == ("m0", "m2", "m3")


def test_projection_entries_tail_equals_full_branch() -> None:
    path = entries_of(*(user(str(i)) if i % 2 == 0 else assistant(str(i)) for i in range(20)))
    path.append(compaction("c1", "m19", first_kept="m14"))
    tail = path[14:]
    assert project(tail) == project(path)


def test_build_compacted_messages() -> None:
    merged = build_compacted_messages("S", [user("q"), assistant("a")])
    assert merged == [
        UserMessage((TextContent(summary_text("S")), TextContent("q"))),
        assistant("a"),
    ]
    standalone = build_compacted_messages("S", [assistant("a")], split_turn_summary="P")
    assert standalone == [UserMessage((TextContent(summary_text("S", "P")),)), assistant("a")]
    assert build_compacted_messages("S", []) == [UserMessage((TextContent(summary_text("S")),))]


def test_notes_are_marked_and_join_the_prompt_they_precede() -> None:
    note = note_message("externalEdit", "a.py changed on disk")
    assert note.note == "externalEdit"
    assert note.content[0].text == "<editor-note>\na.py changed on disk\n</editor-note>"  # type: ignore[union-attr]
    path = entries_of(user("a"), assistant("", call("c1")), result("c1", "r"), note, user("b"))
    messages = project(path).messages
    # After tool results the note stands as its own user-role message (providers put it in
    # the same user turn as the results); before a prompt it joins it, prompt last.
    assert messages[3] == UserMessage((*note.content, TextContent("b")))
    assert messages[3].note is None  # type: ignore[union-attr]
    after_results = project(entries_of(user("a"), assistant("", call("c1")), result("c1", "r"), note))
    assert after_results.messages[-1] == note


def test_a_rewind_with_a_summary_shows_it_as_a_note_where_it_happened() -> None:
    path = entries_of(user("a"), assistant("b"))
    path.append(BranchEntry("br", "m1", "2025-01-01T00:00:00.000Z", "m1", "tried c, it failed"))
    path.extend(entries_of(user("d"), start=2))
    messages = project(path).messages
    assert len(messages) == 3
    text = messages[2].content[0].text  # type: ignore[union-attr]
    assert text.startswith("<editor-note>\n" + BRANCH_SUMMARY_PREFIX)
    assert "tried c, it failed" in text
    assert messages[2].content[-1] == TextContent("d")
    assert project(path).entry_ids[2] == "br"


def test_a_providers_compaction_for_its_api_is_followed_by_what_it_carries() -> None:
    """For the API that made it, the provider's block opens the projection as returned; the
    pins, plan, the user's words and failures the compaction carries come right after it,
    as for our own summaries; for another API both are one readable text."""
    from dataclasses import replace

    from agent_server.context.summary_prompt import render_carried
    from agent_server.llm.messages import AssistantMessage, CompactionContent
    from agent_server.session.entries import Carried

    block = CompactionContent("anthropic-messages", ({"type": "compaction", "content": "x"},), "S")
    carried = Carried(user_messages=("never touch prod",))
    path = entries_of(user("go"), assistant("ok"))
    path.append(replace(compaction("c", "m1", first_kept=None), provider=block, carried=carried))
    native = project(path, "anthropic-messages").messages
    assert native[0] == AssistantMessage((block,), "stop", api="anthropic-messages")
    assert native[1] == UserMessage((TextContent(render_carried(carried)),))
    other = project(path, "openai-responses").messages
    assert len(other) == 1 and "never touch prod" in other[0].content[0].text
    bare = replace(path[-1], carried=None)
    assert len(project([*path[:-1], bare], "anthropic-messages").messages) == 1
