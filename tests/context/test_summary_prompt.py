from __future__ import annotations

from pathlib import Path

from agent_server.agent.tools import default_tools
from agent_server.context.cut_point import find_cut_point
from agent_server.context.summary_prompt import (
    FOLD_INSTRUCTION,
    MAX_TEXT_CHARS,
    NOTES_ARE_NOT_REQUESTS,
    SUMMARY_CONTRACT,
    SUMMARY_REQUEST_MARKER,
    bound_text,
    build_branch_summary_prompt,
    build_summary_instruction,
    build_summary_prompt,
    build_turn_prefix_prompt,
    extract_file_operations,
    fit_conversation,
    note_message,
    previous_summary_text,
    serialize_conversation,
)
from agent_server.llm.messages import (
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from agent_server.session.entries import CompactionDetails, CompactionEntry
from agent_server.session.ledger import Ledger

from .builders import assistant, call, compaction, result, user

SECTIONS = (
    "## Goal",
    "## Constraints and preferences",
    "## Progress",
    "### Done",
    "### In progress",
    "### Blocked",
    "## Key decisions",
    "## Files read",
    "## Files modified",
    "## Next steps",
    "## Critical context",
)


def test_contract_has_every_section_in_order() -> None:
    positions = [SUMMARY_CONTRACT.index(section) for section in SECTIONS]
    assert positions == sorted(positions)
    assert "verbatim" in SUMMARY_CONTRACT


def test_serialize_conversation() -> None:
    messages = [
        UserMessage((TextContent("fix the bug"), ImageContent("AAAA", "image/png"))),
        assistant("", call("c1", "read", path="src/a.py", limit=20)),
        result("c1", "x" * 5000),
        assistant("Fixed."),
        result("c2", "boom", name="bash", error=True),
    ]
    text = serialize_conversation(messages, max_tool_result_chars=100)
    assert "[User]: fix the bug\n[image image/png]" in text
    assert '[Assistant tool call]: read(path="src/a.py", limit=20)' in text
    cut = "x" * 26 + "\n[... 4948 characters cut here ...]\n" + "x" * 26  # at most 100
    assert "[Tool result read]: " + cut + "\n\n[Assistant]" in text
    assert "[Assistant]: Fixed." in text
    assert "[Tool result bash (error)]: boom" in text
    thinking = serialize_conversation(
        [assistant("answer").__class__((ThinkingContent("hmm"), TextContent("ok")), "stop")]
    )
    assert thinking == "[Assistant thinking]: hmm\n\n[Assistant]: ok"


def test_fresh_prompt_without_previous_summary() -> None:
    prompt = build_summary_prompt([user("hello"), assistant("hi")])
    assert prompt.startswith(SUMMARY_REQUEST_MARKER)
    assert "<conversation>\n[User]: hello\n\n[Assistant]: hi\n</conversation>" in prompt
    assert "<previous-summary>" not in prompt
    assert FOLD_INSTRUCTION not in prompt
    assert SUMMARY_CONTRACT in prompt


def test_fresh_prompt_folds_the_previous_summary() -> None:
    prompt = build_summary_prompt(
        [user("new work")],
        previous_summary="## Goal\nold goal",
        instructions="Focus on the parser.",
        file_operations=CompactionDetails(("a.py",), ("b.py",)),
    )
    assert "<previous-summary>\n## Goal\nold goal\n</previous-summary>" in prompt
    assert FOLD_INSTRUCTION in prompt
    assert prompt.index("<conversation>") < prompt.index("<previous-summary>")
    assert "Focus on the parser." in prompt
    assert "Read: a.py" in prompt
    assert "Modified: b.py" in prompt


def test_iterative_summaries_see_only_the_previous_summary_and_what_followed(
    tmp_path: Path,
) -> None:
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never") as led:
        for index in range(6):
            led.append_message(user(f"early prompt {index}"))
            led.append_message(assistant(f"early answer {index}"))
        cut = find_cut_point(led.tree.projection_entries(), keep_recent_turns=2)
        led.add(
            CompactionEntry,
            summary="FIRST SUMMARY",
            first_kept_entry_id=cut.first_kept_entry_id,
            tokens_before=100,
            reason="threshold", tokens_after=None,
        )
        for index in range(6):
            led.append_message(user(f"late prompt {index}"))
            led.append_message(assistant(f"late answer {index}"))
        second = find_cut_point(led.tree.projection_entries(), keep_recent_turns=2)
        assert second.previous is not None
        prompt = build_summary_prompt(
            second.summarize_messages, previous_summary=previous_summary_text(second.previous)
        )
    assert "FIRST SUMMARY" in prompt
    for index in range(4):  # summarised by the first compaction: not sent again
        assert f"early prompt {index}" not in prompt
    # the turns the first compaction kept are in, and so are the newer ones but the last two
    assert "early prompt 4" in prompt
    assert "early prompt 5" in prompt
    assert "late prompt 3" in prompt
    assert "late prompt 4" not in prompt
    assert "late prompt 5" not in prompt


def test_previous_summary_text_includes_a_split_turn() -> None:
    assert previous_summary_text(None) is None
    assert previous_summary_text(compaction("c", None, None, summary="S")) == "S"
    text = previous_summary_text(compaction("c", None, "m1", summary="S", split="P"))
    assert text is not None
    assert text.startswith("S")
    assert text.endswith("P")


def test_summary_instruction_for_the_cached_prefix() -> None:
    text = build_summary_instruction(kept_messages=4, previous_summary_in_context=True)
    assert SUMMARY_REQUEST_MARKER in text
    assert "last 4 messages" in text
    assert "fold it" in text
    assert "Do not call tools" in text
    assert SUMMARY_CONTRACT in text
    none_kept = build_summary_instruction(
        kept_messages=0, previous_summary_in_context=False, instructions="Be short."
    )
    assert "whole conversation" in none_kept
    assert "fold" not in none_kept
    assert "Be short." in none_kept


def test_turn_prefix_prompt() -> None:
    text = build_turn_prefix_prompt(
        [user("big task"), assistant("", call("c1")), result("c1", "r")]
    )
    assert SUMMARY_REQUEST_MARKER in text
    assert "[User]: big task" in text
    assert "early part" in text


def files_of(call: ToolCall) -> tuple[str, tuple[str, ...]]:
    """What the product's own tools declare of a call (the session gives the manager this)."""
    tool = {tool.spec.name: tool for tool in default_tools()}.get(call.name)
    return (tool.kind, tool.paths(call.arguments)) if tool is not None else ("other", ())


def test_extract_file_operations() -> None:
    """Read from what each tool declares (kind, paths), not from the tool's name: a search
    names no file, a command none either, a failed write did not modify anything."""
    messages = [
        assistant(
            "",
            call("c1", "read", path="src/b.py"),
            call("c2", "grep", path="src", pattern="x"),
            call("c3", "edit", path="src/a.py"),
            call("c4", "write", path="src/fail.py"),
            call("c5", "bash", command="ls"),
            call("c6", "read", path="src/a.py"),
        ),
        result("c4", "denied", name="write", error=True),
    ]
    previous = CompactionDetails(read_files=("docs/x.md", "src/b.py"), modified_files=("old.py",))
    details = extract_file_operations(messages, previous, files_of)
    assert details.read_files == ("docs/x.md", "src/b.py")
    assert details.modified_files == ("old.py", "src/a.py")
    assert extract_file_operations([], None) == CompactionDetails()
    # A caller that does not say what its tools do gets no file operations.
    assert extract_file_operations(messages) == CompactionDetails()


# --- bounds, notes, budgets ---------------------------------------------------------------------


def test_every_part_of_a_message_is_bounded_head_and_tail() -> None:
    paste = "HEAD " + "x" * 1_200_000 + " TAIL"
    text = serialize_conversation([user(paste)])
    assert text.startswith("[User]: HEAD ") and text.endswith(" TAIL")
    assert len(text) <= MAX_TEXT_CHARS + 100
    assert "characters cut here" in text
    assert bound_text("short", 10) == "short"
    cut = bound_text("line one\nline two\n" * 100, 200)
    assert len(cut) < 300 and cut.startswith("line one") and cut.rstrip().endswith("line two")


def test_notes_are_labelled_as_notes_not_requests() -> None:
    note = note_message("externalEdit", "a.py changed on disk")
    merged = UserMessage((*note.content, TextContent("fix a.py")))
    old_style = result("c1", "contents")
    old_style = old_style.__class__(
        "c1", "read", (TextContent("contents"), *note.content)
    )  # a note that older sessions appended to a tool result
    older = UserMessage(
        (TextContent("fix b.py"), TextContent("[Note from the editor: a.py changed on disk.]"))
    )  # the bracketed form older sessions appended to the prompt itself
    text = serialize_conversation([note, merged, old_style, older])
    assert "[User]: <editor-note>" not in text and "[User]: [Note" not in text
    assert text.count("[Editor note]: a.py changed on disk") == 4
    assert "[User]: fix b.py" in text
    assert "[User]: fix a.py" in text
    assert "[Tool result read]: contents" in text
    assert NOTES_ARE_NOT_REQUESTS in build_summary_prompt([note])
    instruction = build_summary_instruction(kept_messages=0, previous_summary_in_context=False)
    assert NOTES_ARE_NOT_REQUESTS in instruction


def test_a_prompt_over_its_budget_leaves_the_oldest_messages_out() -> None:
    messages = [user(f"prompt {i} " + "p" * 3000) for i in range(40)]
    whole = build_summary_prompt(messages)
    fitted = build_summary_prompt(messages, previous_summary="## Goal\nold", max_tokens=6000)
    assert len(fitted) <= 6000 * 4
    assert len(fitted) < len(whole)
    assert "older messages left out here" in fitted
    assert "prompt 39 " in fitted and "prompt 0 " not in fitted  # the newest stay
    assert "<previous-summary>\n## Goal\nold" in fitted  # never left out
    assert SUMMARY_CONTRACT in fitted
    one = fit_conversation([user("q" * 50_000)], max_chars=2000)
    assert len(one) <= 2100 and "characters cut here" in one


def test_the_branch_summary_prompt_is_short_and_fitted() -> None:
    prompt = build_branch_summary_prompt(
        [user("try approach B"), assistant("B failed: ImportError")], max_tokens=3000
    )
    assert prompt.startswith(SUMMARY_REQUEST_MARKER)
    assert "[User]: try approach B" in prompt and "ImportError" in prompt
    assert "## Tried" in prompt and "## Left behind" in prompt
    assert len(prompt) <= 3000 * 4
