"""The chat's input as a person types and pastes into it, in a pseudo-terminal, against the
simulator: a multi-line paste is one prompt, and the answers to a question."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.tmux_screen import chat_screen

PASTED = "\n".join(f"line {n} of the stack trace" for n in range(1, 201))
SCENARIO = {
    "name": "input",
    "turns": [
        {"user": PASTED, "steps": [{"text": "That is one long trace."}]},
        {"user": "hello", "steps": [{"text": "Hello."}]},
        {"user": "first\nsecond", "steps": [{"text": "Two lines."}]},
        *(
            {
                "user": f"write note {n}",
                "steps": [
                    {"tools": [{"name": "write", "arguments": {"path": f"n{n}.md", "content": "x\n"}}]},
                    {"text": f"Done with note {n}."},
                ],
            }
            for n in (1, 2, 3)
        ),
    ],
}


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def sent_prompts(tmp_path: Path) -> list[str]:
    """The prompts the session's ledger holds, in order."""
    prompts = []
    for ledger in (tmp_path / "sessions").rglob("*.jsonl"):
        for line in ledger.read_text().splitlines():
            message = json.loads(line).get("message", {})
            if message.get("role") == "user":
                content = message["content"]
                prompts.append(
                    content if isinstance(content, str)
                    else "".join(b.get("text", "") for b in content)
                )
    return prompts


def test_a_pasted_multi_line_text_is_one_prompt(sim: ThreadedSimServer, tmp_path: Path) -> None:
    """The chat asks the terminal for bracketed paste: 200 pasted lines stay in the input
    line, sent as one prompt on Enter, not as 200 prompts."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(
        tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url, height=20
    )
    try:
        screen.wait_for("you ›")
        screen.paste(PASTED + "\n")
        screen.wait_for("line 200 of the stack trace")
        screen.keys("Enter")
        screen.wait_for("That is one long trace.")
        screen.wait_for("you ›", count=2)
        screen.type("/quit")
        screen.keys("Enter")
        screen.wait_for("continues it")
        assert screen.screen().count("agent ›") == 1
    finally:
        screen.close()
    assert sent_prompts(tmp_path) == [PASTED]


def test_a_question_answered_with_enter_y_or_n(sim: ThreadedSimServer, tmp_path: Path) -> None:
    """Enter takes the default (reject) and what follows starts on a line of its own; `y`
    allows once and `n` rejects, as in other agents' terminals; a typo says what to type."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.wait_for("you ›")
        screen.type("write note 1")
        screen.keys("Enter")
        screen.wait_for("choose")
        screen.keys("Enter")
        screen.wait_for("Done with note 1.")
        lines = screen.screen().splitlines()
        answered = [line.rstrip() for line in lines if "choose" in line]
        assert answered == ["  choose [1/2/3/4] (3):"], screen.screen()
        assert any(line.strip().startswith("✗ Write n1.md") for line in lines)

        screen.type("write note 2")
        screen.keys("Enter")
        screen.wait_for("choose", count=2)
        screen.type("yes please")
        screen.keys("Enter")
        screen.wait_for("type 1 to 4")
        screen.type("y")
        screen.keys("Enter")
        screen.wait_for("Done with note 2.")

        screen.type("write note 3")
        screen.keys("Enter")
        screen.wait_for("choose", count=4)
        screen.type("n")
        screen.keys("Enter")
        screen.wait_for("Done with note 3.")
        # The answers are not prompts: the up arrow goes back to the last prompt.
        screen.keys("Up")
        assert screen.visible().rstrip().endswith("you › write note 3")
    finally:
        screen.close()
    assert not (workspace / "n1.md").exists()
    assert (workspace / "n2.md").read_text() == "x\n"
    assert not (workspace / "n3.md").exists()


def test_the_up_arrow_finds_the_prompts_of_an_earlier_chat(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """Prompts typed in a workspace are kept for the next chat there (a pasted prompt whole,
    its lines together); another workspace has its own."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ("--provider", "sim", "--base-url", sim.base_url)
    screen = chat_screen(tmp_path, workspace, *args)
    try:
        screen.wait_for("you ›")
        screen.type("hello")
        screen.keys("Enter")
        screen.wait_for("Hello.")
        screen.paste("first\nsecond")
        screen.keys("Enter")
        screen.wait_for("Two lines.")
        screen.keys("C-d")
        screen.wait_for("continues it")
    finally:
        screen.close()

    screen = chat_screen(tmp_path, workspace, *args)
    try:
        screen.wait_for("you ›")
        screen.keys("Up")
        screen.wait_for("second")
        assert screen.visible().rstrip().endswith("you › first\nsecond")
        screen.keys("Up")
        screen.wait_for("you › hello")
        screen.keys("Enter")
        screen.wait_for("Hello.")
    finally:
        screen.close()

    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    screen = chat_screen(tmp_path, elsewhere, *args)
    try:
        screen.wait_for("you ›")
        screen.keys("Up")
        screen.type("!")
        screen.wait_for("you › !")
    finally:
        screen.close()



def test_continue_opens_the_workspace_latest_session(sim: ThreadedSimServer, tmp_path: Path) -> None:
    """`chat --continue` (`-c`), as `claude --continue`: the workspace's latest session, its
    end shown, the next prompt in it; with no session yet, a clear error."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ("--provider", "sim", "--base-url", sim.base_url)
    screen = chat_screen(tmp_path, workspace, *args, "--continue")
    try:
        screen.wait_for("no session to continue")
        assert "Traceback" not in screen.screen()
    finally:
        screen.close()

    screen = chat_screen(tmp_path, workspace, *args)
    try:
        screen.wait_for("you ›")
        screen.type("hello")
        screen.keys("Enter")
        screen.wait_for("Hello.")
        screen.keys("C-d")
        screen.wait_for("continues it")
    finally:
        screen.close()
    (ledger,) = (tmp_path / "sessions").rglob("*.jsonl")

    screen = chat_screen(tmp_path, workspace, *args, "-c")
    try:
        screen.wait_for(f"session {ledger.stem}")
        screen.wait_for("Hello.")  # the end of the conversation, shown
        screen.wait_for("you ›")
        screen.paste("first\nsecond")
        screen.keys("Enter")
        screen.wait_for("Two lines.")
    finally:
        screen.close()
    assert list((tmp_path / "sessions").rglob("*.jsonl")) == [ledger]
    assert sent_prompts(tmp_path) == ["hello", "first\nsecond"]


def test_a_backslash_at_the_end_of_a_line_goes_on_to_the_next(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """`\\` then Enter starts a new line of the same prompt (as in Claude Code); the up arrow
    brings the prompt back whole."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.wait_for("you ›")
        screen.type("first\\")
        screen.keys("Enter")
        screen.type("second")
        screen.keys("Enter")
        screen.wait_for("Two lines.")
        screen.wait_for("you ›", count=2)
        screen.keys("Up")
        screen.wait_for("second", count=2)
        assert screen.visible().rstrip().endswith("you › first\nsecond")
    finally:
        screen.close()
    assert sent_prompts(tmp_path) == ["first\nsecond"]


def test_help_on_a_narrow_terminal_shows_every_command_whole(tmp_path: Path) -> None:
    """At 40 columns /help lists each command with its arguments on a line of its own,
    nothing cut (an argument cut to `[instruction…` could not be typed back)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", width=40)
    try:
        screen.wait_for("you ›")
        screen.type("/help")
        screen.keys("Enter")
        screen.wait_for("you ›", count=2)
        text = screen.screen()
    finally:
        screen.close()
    assert "…" not in text, text
    for words in ("/compact [instructions]", "/mode [ask|allowReads|allowAll]",
                  "/remember [fact:] text", "/thinking [off|low|medium|high]"):
        assert words in text, text
