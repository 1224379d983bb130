"""Issue 30's terminal items as a person sees them at 80 columns (tmux): switching the model
back while its cache is warm, /rewind with more prompts than it lists and a rejected command,
/compact saying its result once."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.console.tmux_screen import chat_screen

QUESTIONS = [f"question number {n}" for n in range(1, 11)]
SCENARIO = {
    "name": "items",
    "turns": [
        *({"user": q, "steps": [{"text": f"Answer to {q}. " + "More words here. " * 40}]}
          for q in QUESTIONS),
        {
            "user": "clean the build",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": "rm -rf build"}}]},
                {"text": "I did not clean it."},
            ],
        },
    ],
}


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def test_switch_back_rewind_and_compact(sim: ThreadedSimServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = chat_screen(
        tmp_path, workspace, "--provider", "sim", "--base-url", sim.base_url, height=50
    )
    prompts = 1

    def send(line: str) -> str:
        nonlocal prompts
        before = screen.screen()
        screen.type(line)
        screen.keys("Enter")
        prompts += 1
        screen.wait_for("you ›", count=prompts)
        after = screen.ready()
        return after[len(before.rstrip()) :] if after.startswith(before.rstrip()) else after

    try:
        screen.ready()
        send(QUESTIONS[0])
        send("/model sim-large")
        send(QUESTIONS[1])
        back = " ".join(send("/model sim-small").split())
        assert "Switched back to" in back and "cache still holds" in back
        for question in QUESTIONS[2:]:
            send(question)

        screen.type("clean the build")
        screen.keys("Enter")
        asked = screen.wait_for("choose")
        options = dict(re.findall(r"^\s+(\d) (\S.*?)\s*$", asked.rsplit("clean the build", 1)[1], re.M))
        reject = next(number for number, name in options.items() if name == "Reject")
        prompts += 1
        screen.type(reject)
        screen.keys("Enter")
        screen.wait_for("you ›", count=prompts)
        screen.ready()

        screen.type("/rewind")
        screen.keys("Enter")
        listing = screen.wait_for("before which prompt")
        tail = listing.rsplit("/rewind", 1)[1]
        assert "prompts 1 to 2 are earlier" in tail
        assert "11 clean the build" in tail and "3 question number 3" in tail
        screen.type("11")
        screen.keys("Enter")
        plan = screen.wait_for("what goes back").rsplit("/rewind", 1)[1]
        assert "rm -rf build" not in plan  # rejected: it never ran
        cancel = dict(re.findall(r"^\s+(\d) (\S.*?)\s*$", plan, re.M))
        prompts += 1
        screen.type(next(n for n, label in cancel.items() if label == "cancel"))
        screen.keys("Enter")
        screen.wait_for("nothing changed")
        screen.wait_for("you ›", count=prompts)
        screen.ready()

        compacted = send("/compact")
        assert compacted.count("compacted: ") == 1, compacted
        assert "compaction: completed" not in compacted
    finally:
        screen.close()
