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
