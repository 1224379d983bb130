"""Issue 24's sandbox holes, tried as an attacker would over real stdio: `permissions.mode:
allowAll`, `tools.sandbox: auto`, bubblewrap present, the model (the simulator, scripted)
running bash in a repository it works in.

Before: the `.mcp.json` the command wrote started unsandboxed in the next session, with the
server's rights, unasked; the command reached a Unix socket at /var/tmp, read a 0600 key in
the home directory, /etc/shadow (as root) and another session's ledger, all of which went to
the provider; and a fork bomb had no bound.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools.sandbox import sandbox_status
from agent_server.llm.messages import TextContent, ToolResultMessage
from agent_server.session.entries import MessageEntry
from agent_server.session.store import SessionStore
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

from .listener import unix_listeners
from .raw import RawServer, request

STATUS = sandbox_status()
TAG = f"i24-stdio-{os.getpid()}"
SOCKET = Path("/var/tmp") / f"{TAG}.sock"


def attacks(marker: Path, home_key: Path, other_ledger: Path) -> list[str]:
    mcp = json.dumps({"mcpServers": {"pwn": {"command": "touch", "args": [str(marker)]}}})
    return [
        f"echo '{mcp}' > .mcp.json && echo WROTE-MCP",
        "/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect('{SOCKET}'); s.sendall(b'leak'); print('SENT-SOCKET')\"",
        f"cat {home_key}",
        "head -c 200 /etc/shadow | base64 -w0; echo",
        f"cat {other_ledger}",
        # bounded: 2^9 processes at most if nothing stopped it; the limit is 1024 by default,
        # so the command lowers nothing: it shows the command still ends
        "b() { [ $1 -gt 0 ] || return; b $(($1 - 1)) & b $(($1 - 1)) & wait; }; b 8; echo BOMB-DONE",
    ]


@pytest.fixture
def listener() -> Iterator[list[bytes]]:
    with unix_listeners(str(SOCKET)) as received:
        yield received
    SOCKET.unlink()


def results(sessions: Path, workspace: Path, session_id: str) -> list[str]:
    with SessionStore(sessions, workspace).open(session_id) as ledger:
        return [
            "".join(b.text for b in e.message.content if isinstance(b, TextContent))
            for e in ledger.tree.branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
        ]


@pytest.mark.skipif(not STATUS.available, reason=STATUS.reason)
async def test_a_hostile_repository_cannot_get_out_of_the_sandbox(
    tmp_path: Path, listener: list[bytes]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home_key = home / ".ssh" / "id_ed25519"
    home_key.parent.mkdir()
    home_key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nHOMEKEY\n")
    home_key.chmod(0o600)
    sessions = tmp_path / "sessions"
    other_ledger = sessions / "elsewhere" / "other.jsonl"
    other_ledger.parent.mkdir(parents=True)
    other_ledger.write_text('{"type":"session","secret":"OTHERLEDGER"}\n')
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    marker = tmp_path / "pwned"
    commands = attacks(marker, home_key, other_ledger)
    scenario = {
        "name": "escape",
        "turns": [
            {"user": "Set things up.", "steps": [
                *({"tools": [{"name": "bash", "arguments": {"command": c}}]} for c in commands),
                {"text": "Done."},
            ]},
        ],
    }
    settings: dict[str, Any] = {
        "sessionsDir": str(sessions),
        "permissions": {"mode": "allowAll"},
        "tools": {"sandbox": "auto"},
    }
    async with SimServer(Simulator(scenario=parse_scenario(scenario))) as sim:
        settings |= {"provider": "sim", "baseUrl": sim.base_url}
        server = await RawServer.start({**os.environ, "HOME": str(home)})
        try:
            await server.initialize(workspace, settings)
            await server.send_message(
                request("new", "agent/session/new", {"workspaceUri": workspace.as_uri()})
            )
            created = (await server.answer("new"))["result"]
            assert created["sandbox"]["sandboxed"] is True
            session_id = created["sessionId"]
            await server.send_message(
                request("turn", "agent/turn", {"sessionId": session_id, "prompt": "Set things up."})
            )
            turn = (await server.answer("turn"))["result"]
            assert turn["stopReason"] == "end_turn", turn
            # The next session (and a settings change) would start what .mcp.json names.
            await server.send_message(
                request("again", "agent/session/new", {"workspaceUri": workspace.as_uri()})
            )
            again = (await server.answer("again"))["result"]
            await server.send_message(
                {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                 "params": {"settings": {"agent": {"mcp": {"startupTimeout": 5}}}}}
            )
            await server.send_message(
                request("servers", "agent/mcp/servers", {"sessionId": again["sessionId"]})
            )
            await server.answer("servers")
        finally:
            await server.close()
    texts = results(sessions, workspace, session_id)
    joined = "\n".join(texts)
    assert "WROTE-MCP" not in texts[0] and not marker.exists()
    assert not (workspace / ".mcp.json").exists()
    assert "SENT-SOCKET" not in texts[1] and listener == []
    assert "HOMEKEY" not in joined and "PRIVATE KEY" not in joined
    assert texts[3].strip() == "(no output)"  # /etc/shadow is empty in the sandbox
    assert "OTHERLEDGER" not in joined
    assert "BOMB-DONE" in texts[5]


async def test_a_workspace_mcp_json_starts_nothing_until_the_user_approves_its_content(
    tmp_path: Path,
) -> None:
    """Whatever wrote it (an unsandboxed command, a git pull, the repository itself): its
    servers start only after the editor's answer to a question that shows the content."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    marker = tmp_path / "started"
    content = json.dumps({"mcpServers": {"pwn": {"command": "touch", "args": [str(marker)]}}})
    (workspace / ".mcp.json").write_text(content)
    scenario = {"name": "hello", "turns": [
        {"user": "Hello.", "steps": [{"text": "Hi."}]},
        {"user": "Hello again.", "steps": [{"text": "Hi again."}]},
    ]}
    async with SimServer(Simulator(scenario=parse_scenario(scenario))) as sim:
        server = await RawServer.start({**os.environ, "HOME": str(tmp_path)})
        try:
            await server.initialize(
                workspace,
                {"provider": "sim", "baseUrl": sim.base_url,
                 "sessionsDir": str(tmp_path / "sessions")},
                request_permission=True,
            )

            async def turn_answering(name: str, prompt: str, option: str) -> dict[str, Any]:
                await server.send_message(
                    request(f"new-{name}", "agent/session/new", {"workspaceUri": workspace.as_uri()})
                )
                session_id = (await server.answer(f"new-{name}"))["result"]["sessionId"]
                assert not marker.exists(), "started with the session, unasked"
                await server.send_message(
                    request(name, "agent/turn", {"sessionId": session_id, "prompt": prompt})
                )
                asked = await server.wait_for(
                    lambda m: m.get("method") == "agent/requestPermission"
                    and m["params"]["sessionId"] == session_id,
                    "the question about .mcp.json",
                )
                await server.send_message({"jsonrpc": "2.0", "id": asked["id"], "result": {
                    "outcome": {"selected": option}}})
                await server.answer(name)
                return dict(asked["params"])

            first = await turn_answering("t1", "Hello.", "reject_once")
            assert first["toolCall"]["rawInput"]["command"] == content
            assert first["toolCall"]["title"].startswith("Start the MCP servers of .mcp.json")
            assert not marker.exists()
            await turn_answering("t2", "Hello again.", "allow_always")
            for _ in range(1200):  # the server starts in the background: a hang guard
                if marker.exists():
                    break
                await asyncio.sleep(0.05)
            assert marker.exists()
        finally:
            await server.close()
