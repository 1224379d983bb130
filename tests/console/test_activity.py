"""The activity region at the bottom of a terminal chat (console/activity.py), drawn by Rich
on a recording console: what it says while a turn stops."""

from __future__ import annotations

import io

from rich.console import Console

from agent_server.console.activity import Activity


def test_a_stopping_turn_says_so_until_it_has_stopped() -> None:
    """After the first Ctrl-C the region says the turn is stopping and what Ctrl-C does now,
    the command's last lines still under it; the stopping turn's next steps (its aborted
    call, a model request) do not take the line back."""
    console = Console(file=io.StringIO(), force_terminal=True, width=80, record=True)
    activity = Activity(console)
    activity.command("Run: make test")
    activity.output("ready\n")
    activity.stopping()
    activity.waiting("waiting for the model")
    activity.command("Run: make lint")
    activity.stop()
    drawn = console.export_text()
    before, stopping = drawn.split("stopping the turn", 1)
    assert "Ctrl-C stops · Run: make test" in before
    assert "Ctrl-C again quits · stopping the turn" in drawn
    assert "ready" in stopping
    assert "waiting for the model" not in stopping and "make lint" not in stopping
    assert "Ctrl-C stops" not in stopping
