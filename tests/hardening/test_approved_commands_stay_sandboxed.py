"""Issue 44: an approved command still runs in the sandbox, tried over real stdio.

Before: in the default mode (`allowReads`) a command the user allowed, once or always, ran
outside the sandbox (`tools.sandbox: auto` sandboxed only under `allowAll`): it read the
user's home (`~/.ssh`) into the model's context and wrote there. After: allowed, it runs in
the sandbox (the home hidden); only the user's "Allow outside the sandbox" lets it out, and a
call that asks to be let out (`outsideSandbox`) is asked about even under `allowAll`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools.sandbox import sandbox_status
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

from .raw import RawServer, request

pytestmark = pytest.mark.skipif(
    not sandbox_status().available, reason=f"no sandbox here: {sandbox_status().reason}"
)

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key-4e1f"


def bash(command: str, **more: Any) -> dict[str, Any]:
    return {"tools": [{"name": "bash", "arguments": {"command": command, **more}}]}


async def run_turn(
    tmp_path: Path, mode: str, steps: list[dict[str, Any]], answers: list[str]
) -> list[dict[str, Any]]:
    """One turn of `steps` with the permission mode `mode`, each question answered in turn
    with `answers`; the questions asked."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY + "\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    scenario = {"name": "sandboxed", "turns": [
        {"user": "Go.", "steps": [*steps, {"text": "Done."}]},
    ]}
    asked: list[dict[str, Any]] = []
    async with SimServer(Simulator(scenario=parse_scenario(scenario))) as sim:
        server = await RawServer.start({**os.environ, "HOME": str(home)})
        try:
            await server.initialize(
                workspace,
                {"provider": "sim", "baseUrl": sim.base_url, "permissions": {"mode": mode},
                 "sessionsDir": str(tmp_path / "sessions")},
                request_permission=True,
            )
            session_id = await server.new_session(workspace)
            await server.send_message(
                request("turn", "agent/turn", {"sessionId": session_id, "prompt": "Go."})
            )
            for n, answer in enumerate(answers):
                question = await server.wait_for(
                    lambda m: m.get("method") == "agent/requestPermission"
                    and m["id"] not in {q["id"] for q in asked},
                    f"question {n + 1}",
                )
                asked.append(question)
                options = [o["optionId"] for o in question["params"]["options"]]
                assert answer in options, options
                await server.send_message(
                    {"jsonrpc": "2.0", "id": question["id"],
                     "result": {"outcome": {"selected": answer}}}
                )
            turn = await server.answer("turn")
            assert "result" in turn, turn
        finally:
            await server.close()
    return asked


def ledger_text(tmp_path: Path) -> str:
    return "".join(path.read_text() for path in (tmp_path / "sessions").rglob("*.jsonl"))


async def test_an_allowed_command_runs_in_the_sandbox(tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [
        bash("cat ~/.ssh/id_ed25519; touch ~/once"),
        bash("touch ~/always"),
        bash("touch ~/always"),  # the remembered answer: still in the sandbox
    ]
    asked = await run_turn(tmp_path, "allowReads", steps, ["allow_once", "allow_always"])
    assert len(asked) == 2
    assert not (home / "once").exists() and not (home / "always").exists()
    assert KEY not in ledger_text(tmp_path)
    # Every question offered the way out, and said nothing of it in the title.
    for question in asked:
        options = {o["optionId"]: o["name"] for o in question["params"]["options"]}
        assert options["allow_outside"] == "Allow outside the sandbox"


async def test_only_the_user_lets_a_command_out(tmp_path: Path) -> None:
    """The control: the same command, let out, reaches the home. And a call asking out is
    asked about under allowAll, where nothing else is; rejected, it does not run."""
    home = tmp_path / "home"
    steps = [
        bash("touch ~/asked-out", outsideSandbox=True),
        bash("cat ~/.ssh/id_ed25519 > let-out; touch ~/let-out"),  # allowAll: no question
        bash("touch ~/let-out-by-the-user", outsideSandbox=True),
    ]
    asked = await run_turn(tmp_path, "allowAll", steps, ["reject_once", "allow_outside"])
    titles = [q["params"]["toolCall"]["title"] for q in asked]
    assert titles == [
        "Run outside the sandbox: touch ~/asked-out",
        "Run outside the sandbox: touch ~/let-out-by-the-user",
    ]
    assert not (home / "asked-out").exists()
    assert not (home / "let-out").exists()
    assert (tmp_path / "workspace" / "let-out").read_text() == ""  # ran, the home hidden
    assert (home / "let-out-by-the-user").exists()
