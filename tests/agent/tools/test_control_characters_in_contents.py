"""A file's control characters in what read and grep show the model (issue 44, item 6).

Before: read and grep passed a file's raw ESC (an OSC 52 clipboard write, an OSC 8 link), CR
and BS to the model. Now each is its Unicode control picture (`␛`, `␍`, `␈`), one character
for one, and the edit and write tools take the pictures back: an edit copied from what read
showed changes the file as if the model had seen the bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.grep import GrepTool
from agent_server.agent.tools.read import ReadTool
from agent_server.agent.tools.write import WriteTool
from agent_server.literal import as_pictures, from_pictures, has_hidden
from tests.agent.tools.test_tool_grep import ENGINES

CONTENT = (
    'BANNER = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[31mred\x1b[0m"\n'
    "progress = 'one\rtwo'  # a CR\n"
    "erased = 'ab\x08c'\n"
    'source = "\\x1b[0m"  # the four characters, as written\n'
)


def test_pictures_stand_for_control_characters_one_for_one() -> None:
    assert as_pictures("a\x1b[31mb\x7f\x00\tc\n") == "a␛[31mb␡␀\tc\n"
    assert from_pictures("a␛[31mb␡␀\tc\n") == "a\x1b[31mb\x7f\x00\tc\n"


@given(st.text(alphabet=st.characters(max_codepoint=0x7F) | st.sampled_from("é…")))
def test_from_pictures_takes_back_what_as_pictures_shows(text: str) -> None:
    shown = as_pictures(text)
    assert from_pictures(shown) == text
    assert len(shown) == len(text)
    assert not any((ch < " " and ch not in "\t\n") or ch == "\x7f" for ch in shown)


def test_characters_without_a_picture_are_shown_by_their_code_point() -> None:
    """C1 (U+009B is a CSI on an 8-bit terminal), bidi controls (Trojan Source's U+202E),
    invisible format characters (a BOM, a zero-width space); the joiners emoji need stay."""
    text = "a\u202eb\x9bc\ufeffd\u200be\u200d"
    assert as_pictures(text) == "a⟨U+202E⟩b⟨U+009B⟩c⟨U+FEFF⟩d⟨U+200B⟩e\u200d"
    assert from_pictures(as_pictures(text)) == text
    # Only a character shown so is taken back: an ordinary one written so stays as written.
    assert from_pictures("⟨U+0041⟩ ⟨U+110000⟩") == "⟨U+0041⟩ ⟨U+110000⟩"


@given(st.text(alphabet=st.characters(max_codepoint=0x2070) | st.sampled_from("\ufeff\U000e0041")))
def test_nothing_hidden_reaches_the_model_and_all_of_it_comes_back(text: str) -> None:
    if "⟨" in text or any("\u2400" <= ch <= "\u2421" for ch in text):
        return  # a file holding the notation as written: the tools' own rule (below)
    shown = as_pictures(text)
    assert not has_hidden(shown)
    assert from_pictures(shown) == text


async def test_read_shows_control_pictures_and_edit_takes_them_back(
    ctx: ToolContext, workspace: Path
) -> None:
    path = workspace / "banner.py"
    path.write_bytes(CONTENT.encode())
    shown = (await run_tool(ReadTool(), {"path": "banner.py"}, ctx)).text
    assert "\x1b" not in shown and "\r" not in shown and "\x08" not in shown
    assert '"␛]52;c;cm0gLXJmIH4=␇␛[31mred␛[0m"' in shown
    assert "'one␍two'" in shown and "'ab␈c'" in shown
    assert 'source = "\\x1b[0m"' in shown  # what is written as text stays text
    # The model copies the line as it saw it and changes it.
    old = next(line for line in shown.split("\n") if line.startswith("BANNER"))
    new = old.replace("␛[31mred", "␛[32mgreen")
    result = await run_tool(EditTool(), {"path": "banner.py", "oldText": old, "newText": new}, ctx)
    assert not result.is_error, result.text
    assert path.read_bytes().decode() == CONTENT.replace("\x1b[31mred", "\x1b[32mgreen")


async def test_an_edit_of_pictures_the_file_holds_as_written_stays_literal(
    ctx: ToolContext, workspace: Path
) -> None:
    path = workspace / "symbols.md"
    path.write_text("The symbol for escape is ␛.\n")
    arguments = {"path": "symbols.md", "oldText": "is ␛.", "newText": "is ␛ (U+241B)."}
    assert not (await run_tool(EditTool(), arguments, ctx)).is_error
    assert path.read_text() == "The symbol for escape is ␛ (U+241B).\n"


async def test_write_over_a_file_with_control_characters_takes_the_pictures_back(
    ctx: ToolContext, workspace: Path
) -> None:
    path = workspace / "banner.py"
    path.write_bytes(CONTENT.encode())
    shown = (await run_tool(ReadTool(), {"path": "banner.py"}, ctx)).text
    rewritten = shown.replace("red", "blue") + "\n"
    assert not (await run_tool(WriteTool(), {"path": "banner.py", "content": rewritten}, ctx)).is_error
    assert path.read_bytes().decode() == CONTENT.replace("red", "blue")


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_shows_matched_lines_with_control_pictures(
    engine: str | None, ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "banner.py").write_bytes(CONTENT.encode())
    result = await run_tool(GrepTool(rg=engine), {"pattern": "BANNER|progress"}, ctx)
    assert "\x1b" not in result.text and "\r" not in result.text
    assert "␛]52;c;" in result.text and "'one␍two'" in result.text


async def test_a_trojan_source_line_is_shown_and_edited_by_its_code_points(
    ctx: ToolContext, workspace: Path
) -> None:
    """Trojan Source (CVE-2021-42574): a right-to-left override makes a comment look like
    code to a reader. The model sees the override as `⟨U+202E⟩`, and an edit of that line
    keeps the file's bytes but for what it changed."""
    content = 'access_level = "user"\nif access_level != "user\u202e \u2066// Check if admin\u2069 \u2066":\n'
    path = workspace / "auth.py"
    path.write_text(content)
    shown = (await run_tool(ReadTool(), {"path": "auth.py"}, ctx)).text
    assert "\u202e" not in shown and "\u2066" not in shown
    assert '"user⟨U+202E⟩ ⟨U+2066⟩// Check if admin⟨U+2069⟩ ⟨U+2066⟩"' in shown
    old = next(line for line in shown.split("\n") if line.startswith("if access_level"))
    new = old.replace("if access_level", "if level")
    result = await run_tool(EditTool(), {"path": "auth.py", "oldText": old, "newText": new}, ctx)
    assert not result.is_error, result.text
    assert path.read_text() == content.replace("if access_level", "if level")
