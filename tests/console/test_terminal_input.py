"""The chat's input as a person types and pastes into it, in a pseudo-terminal, against the
simulator: a multi-line paste is one prompt, and the answers to a question."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.console.line_input import CONTINUATION
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.tmux_screen import TmuxScreen, chat_screen

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
            for n in (1, 2, 3, 4, 5, 6, 7)
        ),
        # A turn that lasts until the test says so: its command waits for a file `go`.
        {
            "user": "wait for go",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {
                    "command": "until [ -e go ]; do sleep 0.05; done; echo went"}}]},
                {"text": "Went on."},
            ],
        },
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
        screen.ready()
        screen.paste(PASTED + "\n")
        screen.wait_for("line 200 of the stack trace")
        screen.keys("Enter")
        screen.wait_for("That is one long trace.")
        screen.prompt("/quit")
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
        screen.prompt("write note 1")
        screen.wait_for("choose")
        screen.keys("Enter")
        screen.wait_for("Done with note 1.")
        lines = screen.screen().splitlines()
        answered = [line.rstrip() for line in lines if "choose" in line]
        assert answered == ["  choose [1/2/3/4] (3):"], screen.screen()
        assert any(line.strip().startswith("✗ Write n1.md") for line in lines)

        screen.prompt("write note 2")
        screen.wait_for("choose", count=2)
        screen.type("yes please")
        screen.keys("Enter")
        screen.wait_for("type 1 to 4")
        screen.type("y")
        screen.keys("Enter")
        screen.wait_for("Done with note 2.")

        screen.prompt("write note 3")
        screen.wait_for("choose", count=4)
        screen.type("n")
        screen.keys("Enter")
        screen.wait_for("Done with note 3.")
        # The answers are not prompts: the up arrow goes back to the last prompt.
        screen.ready()
        screen.keys("Up")
        screen.ready("write note 3")
    finally:
        screen.close()
    assert not (workspace / "n1.md").exists()
    assert (workspace / "n2.md").read_text() == "x\n"
    assert not (workspace / "n3.md").exists()


def test_always_at_a_question_allows_that_call_for_the_session(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """`always` (or Codex's `a`) takes the first always-allow: the call runs, and the same
    kind of call later in the session is not asked about again."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.prompt("write note 4")
        screen.wait_for("choose")
        screen.type("always")
        screen.keys("Enter")
        screen.wait_for("Done with note 4.")
        screen.prompt("write note 5")
        screen.wait_for("Done with note 5.")
        assert screen.screen().count("choose [") == 1, screen.screen()
    finally:
        screen.close()
    assert (workspace / "n4.md").read_text() == "x\n"
    assert (workspace / "n5.md").read_text() == "x\n"


def test_clear_starts_a_new_session_and_resume_goes_back(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """Claude Code's `/clear` (our `/new`) goes on in a new session, the one left kept and
    how to continue it said; `/resume <id>` (`/sessions <id>`) goes back to it, its end
    shown."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.prompt("hello")
        screen.wait_for("Hello.")
        (first,) = [p.stem for p in (tmp_path / "sessions").rglob("*.jsonl")]
        screen.prompt("/clear")
        screen.wait_for(f"`agent-server chat --session {first[:8]}` continues it")
        screen.prompt("hello")
        screen.wait_for("Hello.", count=2)
        ledgers = {p.stem: p for p in (tmp_path / "sessions").rglob("*.jsonl")}
        assert len(ledgers) == 2, ledgers  # a second session, the first kept
        screen.prompt(f"/resume {first[:6]}")
        screen.wait_for(f"session {first} ·")
        screen.prompt("/quit")
        screen.wait_for("Pane is dead")
        back = screen.screen().split(f"/resume {first[:6]}", 1)[1]
    finally:
        screen.close()
    assert "you › hello" in back and "Hello." in back, back
    # Each session holds its own one prompt: the new one did not carry the first's.
    for ledger in ledgers.values():
        prompts = [line for line in ledger.read_text().splitlines() if '"role": "user"' in line
                   or '"role":"user"' in line]
        assert len(prompts) == 1, ledger.read_text()


def test_quitting_after_resume_says_how_to_continue_the_session_gone_back_to(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """Back in a session by `/resume <id>`, quitting with no new prompt still says how to
    continue it (it has prompts: it is kept); the empty session left on the way says
    nothing (it is not kept)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.prompt("hello")
        screen.wait_for("Hello.")
        (first,) = [p.stem for p in (tmp_path / "sessions").rglob("*.jsonl")]
        screen.prompt("/clear")
        screen.wait_for("continues it")
        screen.prompt(f"/resume {first[:6]}")
        screen.wait_for(f"session {first} ·")
        screen.prompt("/quit")
        screen.wait_for("Pane is dead")
        back = screen.screen().split(f"/resume {first[:6]}", 1)[1]
    finally:
        screen.close()
    assert back.count("continues it") == 1, back
    assert f"session {first}: `agent-server chat --session {first[:8]}` continues it" in back
    assert [p.stem for p in (tmp_path / "sessions").rglob("*.jsonl")] == [first]


def test_new_keeps_the_thinking_level_and_the_always_answers(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """`/new` (`/clear`) starts the conversation again, not the settings: the thinking level
    and an "always" answer given in the session left hold in the new one (as Claude Code's
    /clear keeps its permission rules), and the chat says which answers it kept."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.prompt("/thinking high")
        screen.wait_for("thinking: high")
        screen.prompt("write note 6")
        screen.wait_for("choose")
        screen.type("always")
        screen.keys("Enter")
        screen.wait_for("Done with note 6.")
        screen.prompt("/new")
        screen.wait_for("kept from the last session: always allow every write call")
        screen.prompt("/thinking")
        screen.wait_for("thinking: high", count=2)
        screen.prompt("write note 7")
        screen.wait_for("Done with note 7.")
        assert screen.screen().count("choose [") == 1, screen.screen()
    finally:
        screen.close()
    assert (workspace / "n7.md").read_text() == "x\n"
    assert len(list((tmp_path / "sessions").rglob("*.jsonl"))) == 2


def test_usage_shows_the_recorded_last_turn_or_says_there_was_none(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """`/usage` in a new session says there was no turn yet (not a "last turn" of zeros);
    in a continued one (`--session`) it shows the last turn its ledger records, and
    quitting it with no new prompt says how to continue it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ("--provider", "sim", "--base-url", sim.base_url)
    screen = chat_screen(tmp_path, workspace, *args)
    try:
        screen.prompt("/usage")
        screen.wait_for("no turn yet in this session")
        assert "last turn" not in screen.screen(), screen.screen()
        screen.prompt("hello")
        screen.wait_for("Hello.")
        screen.ready()
        screen.keys("C-d")
        screen.wait_for("continues it")
    finally:
        screen.close()
    (ledger,) = (tmp_path / "sessions").rglob("*.jsonl")

    screen = chat_screen(tmp_path, workspace, *args, "--session", ledger.stem[:8])
    try:
        screen.prompt("/usage")
        usage = screen.wait_for("compactions").split("/usage", 1)[1]
        screen.ready()
        screen.keys("C-d")
        screen.wait_for("continues it")
    finally:
        screen.close()
    assert "last turn" in usage and "no turn yet" not in usage, usage
    # The turn before: one model call, the session's only one.
    assert re.search(r"model calls[\s│]+1[\s│]+1\n", usage), usage


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
        screen.prompt("hello")
        screen.wait_for("Hello.")
        screen.ready()
        screen.paste("first\nsecond")
        screen.keys("Enter")
        screen.wait_for("Two lines.")
        screen.ready()
        screen.keys("C-d")
        screen.wait_for("continues it")
    finally:
        screen.close()

    screen = chat_screen(tmp_path, workspace, *args)
    try:
        screen.ready()
        screen.keys("Up")
        screen.wait_for_end("you › first\nsecond")
        screen.keys("Up")
        screen.ready("hello")
        screen.keys("Enter")
        screen.wait_for("Hello.")
    finally:
        screen.close()

    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    screen = chat_screen(tmp_path, elsewhere, *args)
    try:
        screen.ready()
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
        screen.prompt("hello")
        screen.wait_for("Hello.")
        screen.ready()
        screen.keys("C-d")
        screen.wait_for("continues it")
    finally:
        screen.close()
    (ledger,) = (tmp_path / "sessions").rglob("*.jsonl")

    screen = chat_screen(tmp_path, workspace, *args, "-c")
    try:
        screen.wait_for(f"session {ledger.stem}")
        screen.wait_for("Hello.")  # the end of the conversation, shown
        screen.ready()
        screen.paste("first\nsecond")
        screen.keys("Enter")
        screen.wait_for("Two lines.")
    finally:
        screen.close()
    assert list((tmp_path / "sessions").rglob("*.jsonl")) == [ledger]
    assert sent_prompts(tmp_path) == ["hello", "first\nsecond"]


def _during_a_turn(tmp_path: Path, *args: str) -> tuple[TmuxScreen, Path]:
    """A chat whose turn runs until the workspace holds `go` (its command waits for it)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--yes", *args)
    screen.prompt("wait for go")
    screen.wait_for("until [ -e go ]")  # the command runs: the chat reads no line now
    return screen, workspace / "go"


def test_ctrl_d_typed_during_a_turn_quits_when_it_ends(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """Ctrl-D typed while a turn runs is kept for the prompt after it, where it quits (the
    terminal's own line mode turned it into nothing, and the chat waited for a line)."""
    screen, go = _during_a_turn(tmp_path, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.keys("C-d")
        screen.typed_ahead(1)
        go.touch()
        screen.wait_for("Went on.")
        screen.wait_for("continues it")
        screen.wait_for("Pane is dead")
        assert screen.status() == "0", screen.screen()
    finally:
        screen.close()
    assert sent_prompts(tmp_path) == ["wait for go"]


def test_a_text_pasted_during_a_turn_is_one_prompt(sim: ThreadedSimServer, tmp_path: Path) -> None:
    """A text pasted while a turn runs, and Enter after it, is the next prompt, one prompt
    whatever its lines (bracketed paste stays on between reads); nothing typed shows over
    the turn's output until the prompt is back."""
    screen, go = _during_a_turn(tmp_path, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.paste("first\nsecond")
        screen.keys("Enter")
        screen.typed_ahead(len("\x1b[200~first\nsecond\x1b[201~\r"))
        assert "second" not in screen.screen(), screen.screen()  # not echoed over the turn
        go.touch()
        screen.wait_for("Two lines.")
        screen.ready()
    finally:
        screen.close()
    assert sent_prompts(tmp_path) == ["wait for go", "first\nsecond"]


def test_a_backslash_at_the_end_of_a_line_goes_on_to_the_next(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """`\\` then Enter starts a new line of the same prompt (as in Claude Code); the up arrow
    brings the prompt back whole."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url)
    try:
        screen.prompt("first\\")
        screen.ready(prompt=CONTINUATION)
        screen.type("second")
        screen.keys("Enter")
        screen.wait_for("Two lines.")
        screen.ready()
        screen.keys("Up")
        screen.wait_for_end("you › first\nsecond")
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
        screen.prompt("/help")
        # The help's last command drawn, then the prompt back: `ready` alone could still see
        # the prompt /help was typed at, before the chat took the keys.
        screen.wait_for("/thinking [")
        screen.ready()
        text = screen.screen()
    finally:
        screen.close()
    assert "…" not in text, text
    for words in ("/compact [instructions]", "/mode [ask|allowReads|allowAll]",
                  "/remember [fact:] text", "/thinking [off|low|medium|high]"):
        assert words in text, text
