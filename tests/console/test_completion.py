"""Tab on an `@path` mention, as a person sees it at 80 columns (tmux): it never deletes
what was typed, and a completed file gets a trailing space so it is attached."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.console.line_input import mention_matches
from tests.console.tmux_screen import TmuxScreen, chat_screen


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[TmuxScreen]:
    workspace = tmp_path / "ws"
    for name in ("weather/cli.py", "weather/config.py", "weather/api/client.py"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("print('hi')\n")
    screen = chat_screen(tmp_path, workspace, "--provider", "sim")
    screen.ready()
    yield screen
    screen.close()


def prompt_line(screen: TmuxScreen) -> str:
    return [line for line in screen.visible().splitlines() if line.startswith("you ›")][-1]


def test_tab_keeps_the_typed_word_and_a_completed_file_is_attached(chat: TmuxScreen) -> None:
    chat.type("What does @weather/c")
    chat.keys("Tab")
    chat.keys("Tab")  # ambiguous: the second Tab lists
    screen = chat.wait_for("@weather/config.py")
    assert "@weather/cli.py" in screen
    assert prompt_line(chat).rstrip() == "you › What does @weather/c"

    chat.type("l")
    chat.keys("Tab")
    chat.wait_for("you › What does @weather/cli.py")
    chat.type("do?")
    chat.wait_for("@weather/cli.py do?")
    assert prompt_line(chat).rstrip() == "you › What does @weather/cli.py do?"
    chat.keys("Enter")
    chat.wait_for("attached weather/cli.py")


def test_loose_matches_are_listed_and_the_word_stays(chat: TmuxScreen) -> None:
    chat.type("see @wcl")
    chat.keys("Tab")
    screen = chat.wait_for("@weather/api/client.py")
    assert "@weather/cli.py" in screen
    assert prompt_line(chat).rstrip() == "you › see @wcl"
    chat.type("x")  # the line is still edited where it was
    chat.wait_for("you › see @wclx")
    assert prompt_line(chat).rstrip() == "you › see @wclx"


def test_the_matches_offered_never_shorten_the_word() -> None:
    found = [("weather/cli.py", False), ("weather/api/client.py", False), ("weather/", True)]
    assert mention_matches("@weather/c", found) == (["@weather/cli.py "], [])
    assert mention_matches("@weather", found)[0] == [c + " " for c in ("@weather/cli.py", "@weather/api/client.py")] + ["@weather/"]
    assert mention_matches("@wcl", found[:2]) == ([], ["@weather/cli.py", "@weather/api/client.py"])
    assert mention_matches("@wcl", found[:1]) == (["@weather/cli.py "], [])
    assert mention_matches("@my", [("my docs/a.md", False)]) == (['@"my docs/a.md" '], [])
