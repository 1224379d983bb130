"""A command the agent runs, as a person sees it at 80 columns (tmux): its last lines and a
spinner while it runs, collapsed to its last lines and a count once it ends, whole with
/output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.tmux_screen import chat_screen

# Three lines, a pause long enough to look at the screen, then 27 more lines.
COMMAND = (
    "for i in 1 2 3; do echo step $i; done; "
    "while [ ! -e go ]; do sleep 0.2; done; "
    "for i in $(seq 4 30); do echo step $i; done"
)
SCENARIO = {
    "name": "command output",
    "turns": [
        {
            "user": "run the steps",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": COMMAND}}]},
                {"text": "The steps ran."},
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def test_a_running_command_shows_its_last_lines_then_collapses(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url,
                         "--yes")
    try:
        screen.prompt("run the steps")
        running = screen.wait_for("step 3")
        assert "Ctrl-C stops" in running  # the spinner line: something runs
        assert "Run: for i in 1 2 3" in running
        (workspace / "go").touch()
        done = screen.wait_for("The steps ran.")
        screen.wait_for("you ›", count=2)
        done = screen.screen()
        assert "✓ Run: for i in 1 2 3" in done
        collapsed = done.split("✓ Run:", 1)[1].split("agent ›", 1)[0]
        rows = [row.strip() for row in collapsed.splitlines()[2:]]
        assert rows[:6] == ["step 1", "step 2", "… +25 lines (/output shows them all)",
                            "step 28", "step 29", "step 30"], collapsed
        assert "Ctrl-C stops" not in screen.visible()  # the region is gone
        # The meter fits the 80 columns: its cost is on its own row.
        meter = next(line for line in done.splitlines() if line.startswith("context "))
        assert "$0.0" in meter and "cached" in meter

        screen.prompt("/output")
        whole = screen.wait_for("you ›", count=3)
        listed = whole.rsplit("/output", 1)[1]
        for n in (1, 5, 17, 30):
            assert f"step {n}\n" in listed + "\n", n
    finally:
        screen.close()


def test_a_terminal_narrowed_while_a_command_runs_keeps_no_stale_spinner_rows(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """The terminal goes from 80 to 30 columns while the region shows the spinner and the
    command's lines: it wraps the longer ones onto more rows, and the region, drawn again
    and then erased at the end, leaves none of them behind."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url,
                         "--yes")
    try:
        screen.prompt("run the steps")
        screen.wait_for("step 3")
        screen.resize(30)
        screen.wait_for("Ctrl-C stops · Run: fo…")  # the region drawn at the new width
        (workspace / "go").touch()
        screen.wait_for("The steps ran.")
        screen.wait_for("you ›", count=2)
        text = screen.screen()
    finally:
        screen.close()
    spinner_rows = [row for row in text.splitlines() if any("\u2800" <= c <= "\u28ff" for c in row)]
    assert spinner_rows == [], text
