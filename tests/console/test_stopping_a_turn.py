"""Ctrl-C while a turn runs, as a person sees it in a terminal (tmux), against the simulator:
the first says at once that the turn is stopping, the second quits as a normal exit does (the
way back in said, the session saved). The turn runs a command that ignores SIGTERM, so that
stopping it takes the kill's grace (SIGTERM, then SIGKILL) as a slow stop does."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.tmux_screen import TmuxScreen, chat_screen
from tests.stubborn_command import SCENARIO, group_running, wait_for_group, wait_for_term


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def start_stubborn_turn(
    sim: ThreadedSimServer, tmp_path: Path, *, under_shell: bool = False
) -> TmuxScreen:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = tmp_path / "config.json"  # unsandboxed: its group is this machine's
    config.write_text(json.dumps({"tools": {"sandbox": "off"}}))
    screen = chat_screen(
        tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url, "--yes",
        "--config", str(config), under_shell=under_shell,
    )
    try:
        screen.prompt("run it")
        screen.wait_for("ready")
        # "ready" is in the call's title too: the command has run once it wrote its group.
        wait_for_group(workspace)
    except BaseException:
        screen.close()  # a chat that never got this far is not left running
        raise
    return screen


def after(text: str, marker: str) -> str:
    assert marker in text, text
    return text.split(marker, 1)[1]


def test_the_first_ctrl_c_says_at_once_that_the_turn_is_stopping(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """The stop is said before the turn has stopped (the command is still being killed),
    and the chat goes on after it."""
    screen = start_stubborn_turn(sim, tmp_path)
    try:
        screen.keys("C-c")
        screen.wait_for("turn ended: cancelled")
        stopped = after(screen.screen(), "you › run it")
        # Said first, above what the stop brought (the killed call, the turn's end).
        assert "stopping the turn (Ctrl-C again quits)" in stopped.split("✗ Run")[0], stopped
        screen.prompt("hello")
        screen.wait_for("Hello.")
    finally:
        screen.close()


def test_a_second_ctrl_c_quits_with_the_way_back_and_the_session_saved(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """Ctrl-C twice during a turn: exit 130 with the line a normal exit prints (how to
    continue), nothing of the stopping turn after it; the ledger whole, the turn's end in it
    (the killed call's result), the command gone."""
    screen = start_stubborn_turn(sim, tmp_path, under_shell=True)
    try:
        screen.keys("C-c")
        # The second Ctrl-C must land while the turn stops (two seconds: the command outlives
        # SIGTERM). The chat is held still from the moment the command got SIGTERM (seen in
        # a file, not on a screen read every fraction of a second) until its second SIGINT
        # is pending, so that however slow this machine is, the key comes before the turn
        # can have ended: the grace's timer is the chat's, and it is stopped.
        wait_for_term(tmp_path / "ws")
        with screen.held():
            screen.wait_for("stopping the turn")  # written before the kill began
            screen.keys("C-c")
            screen.signal_pending(signal.SIGINT)
        screen.wait_for("Pane is dead")
        status, text = screen.status(), screen.screen()
    finally:
        screen.close()
    assert status == "130", text
    (ledger,) = (tmp_path / "sessions").rglob("*.jsonl")
    goodbye = after(text, "interrupted\n")
    assert f"`agent-server chat --session {ledger.stem[:8]}` continues it" in goodbye, text
    assert "✗" not in goodbye and "turn ended" not in goodbye, text
    raw = ledger.read_text()
    assert raw.endswith("\n")
    entries = [json.loads(line) for line in raw.splitlines()]  # no line half-written
    last = entries[-1]["message"]
    assert last["role"] == "toolResult" and last["toolName"] == "bash", last
    pgid = int((tmp_path / "ws" / "pgid").read_text())
    assert not group_running(pgid)


def test_closing_the_terminal_stops_the_running_command(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """The terminal window closed during a turn (SIGHUP): the command the turn runs (in a
    process group of its own, ignoring SIGTERM) is stopped as a quit stops it, not left
    running with no one to stop it; the turn's end is in the ledger."""
    screen = start_stubborn_turn(sim, tmp_path)
    pgid = int((tmp_path / "ws" / "pgid").read_text())
    try:
        os.kill(screen.pid(), signal.SIGHUP)  # what a closed window sends
        screen.wait_for("Pane is dead")  # the command killed (2 s of grace), the chat closed
        status = screen.status()
    finally:
        screen.close()
    assert status == "129"  # 128 + SIGHUP, as the README says
    assert not group_running(pgid)
    (ledger,) = (tmp_path / "sessions").rglob("*.jsonl")
    last = json.loads(ledger.read_text().splitlines()[-1])["message"]
    assert last["role"] == "toolResult" and last["toolName"] == "bash", last


def test_group_running_sees_this_process() -> None:
    assert os.getpid() in group_running(os.getpgid(0))


def test_compact_stops_as_a_turn_does_and_ends_with_the_meter(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """/compact stops as a turn does: the first Ctrl-C says so (and what a second does),
    the history stays as it was, and the chat goes on; a /compact that completes ends, as a
    turn does, with the context meter."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(
        tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url, "--yes"
    )
    try:
        for turn in range(1, 4):
            screen.prompt("hello")
            screen.wait_for("Hello.", count=turn)
        screen.ready()
        sim.simulator.set_faults("slow@1:30")  # the summary request hangs
        screen.type("/compact")
        screen.keys("Enter")
        screen.wait_for("compacting")
        screen.keys("C-c")
        screen.wait_for("the history is unchanged")
        stopped = after(screen.screen(), "you › /compact")
        assert "stopping the compaction (Ctrl-C again quits)" in stopped, stopped
        assert stopped.count("compaction cancelled") == 1, stopped  # said once
        sim.simulator.set_faults(None)
        # Once done, the context meter says what the history is now, as after a turn.
        screen.prompt("/compact")
        screen.wait_for("compacted: ")
        screen.wait_for("you ›", count=6)  # 3 prompts, 2 /compacts, and the next
        compacted = after(screen.screen(), "compacted: ")
        assert "context " in compacted and "compacted 1×" in compacted, compacted
    finally:
        sim.simulator.set_faults(None)
        screen.close()
