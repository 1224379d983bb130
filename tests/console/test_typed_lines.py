"""What a typed line is: a command (known or not) or a prompt, and the images its paths name."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from agent_server.console.chat import TerminalChat
from agent_server.console.commands import COMMANDS, prompt_with_images, read_command
from agent_server.console.line_input import HISTORY_KEPT, PromptHistory
from agent_server.console.render import CommandOutput
from agent_server.llm.messages import ImageContent, TextContent
from tests.console.test_chat_commands import PNG


def test_commands_unknown_commands_and_paths() -> None:
    assert read_command("hello") is None
    assert read_command("/etc/hosts is empty, why?") is None  # a path: a prompt
    typed = read_command("/compact keep the plan")
    assert typed is not None and typed.command is not None
    assert typed.command.name == "/compact" and typed.argument == "keep the plan"
    unknown = read_command("/frobnicate")
    assert unknown is not None and unknown.command is None and unknown.word == "/frobnicate"
    exit_ = read_command("/EXIT")
    assert exit_ is not None and exit_.command is not None and exit_.command.name == "/quit"
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


def test_image_paths_become_images_and_the_rest_stays_text(tmp_path: Path) -> None:
    (tmp_path / "a b.png").write_bytes(PNG)
    (tmp_path / "fake.png").write_text("not an image")
    blocks, images = prompt_with_images(
        "compare 'a b.png' with ./missing.png and fake.png and @a.png", tmp_path
    )
    assert [image.path.name for image in images] == ["a b.png"]
    assert blocks[0] == TextContent(
        "compare [image 1: a b.png] with ./missing.png and fake.png and @a.png"
    )
    assert isinstance(blocks[1], ImageContent) and blocks[1].mime_type == "image/png"
    escaped, found = prompt_with_images("see a\\ b.png.", tmp_path)
    assert len(found) == 1 and escaped[0] == TextContent("see [image 1: a b.png].")


def test_help_shows_every_command_with_its_arguments() -> None:
    buffer = io.StringIO()
    chat = TerminalChat(
        Console(file=buffer, width=160, color_system=None), assume_yes=False, interactive=True
    )
    chat.show_help()
    rows = {line.split()[0]: line for line in buffer.getvalue().splitlines()}
    for command in COMMANDS:
        assert command.arguments in rows[command.name], command.name
    assert "[ask|allowReads|allowAll]" in rows["/mode"] and "[fact:] text" in rows["/remember"]


def test_output_takes_a_number_in_range_and_answers_anything_else_with_its_usage() -> None:
    buffer = io.StringIO()
    chat = TerminalChat(
        Console(file=buffer, width=160, color_system=None), assume_yes=False, interactive=True
    )
    chat.printer.outputs = [CommandOutput(f"Run: step {n}", f"out {n}\n", 1, None) for n in (1, 2)]
    for argument, answer in (("", "out 2"), ("2", "out 1"), ("1", "out 2")):
        buffer.seek(0)
        buffer.truncate(0)
        chat.output_command(argument)
        assert answer in buffer.getvalue(), argument
    for wrong in ("abc", "-1", "0", "9", "1.5"):
        buffer.seek(0)
        buffer.truncate(0)
        chat.output_command(wrong)
        assert buffer.getvalue() == "/output takes 1 to 2 (the Nth last command)\n", wrong


def test_the_prompt_history_keeps_the_last_prompts_whole_and_trims_its_file(
    tmp_path: Path,
) -> None:
    """The workspace's prompts for the up arrow: a prompt with newlines comes back whole, the
    last HISTORY_KEPT are kept, the file is rewritten once it holds twice as many, and a line
    that is not a JSON string (a damaged file) is passed over."""
    history = PromptHistory(tmp_path / "ws-key" / "prompt-history.txt")
    assert history.load() == []  # no file yet
    history.add("first line\nsecond line")
    with history.path.open("a", encoding="utf-8") as file:
        file.write("not json\n")
    for number in range(2 * HISTORY_KEPT):
        history.add(f"prompt {number}")
    loaded = history.load()
    assert len(loaded) == HISTORY_KEPT and loaded[-1] == f"prompt {2 * HISTORY_KEPT - 1}"
    assert len(history.path.read_text(encoding="utf-8").splitlines()) == HISTORY_KEPT
    history.add("again")
    assert history.load()[-1] == "again"
    short = PromptHistory(tmp_path / "other" / "prompt-history.txt")
    short.add("a\nb")
    assert short.load() == ["a\nb"]
