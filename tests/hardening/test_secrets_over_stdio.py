"""The provider key never leaves the server, whatever bash does (over real stdio).

The attacks the issue measured, run by the model through bash with `allowAll`: the server's
environment through /proc/$PPID/environ (whole, base64, reversed, cut), `env`, and the key
printed on a line so long that it straddles the 4096-character flush. Everything the editor
received, the ledger and the saved full outputs are searched for the key and its encodings.
Run unsandboxed and, where bubblewrap works, sandboxed.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools.sandbox import sandbox_status
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

from .raw import RawServer, request

KEY = "sk-ant-api03-" + "Kq7w" * 22 + "-AA"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PROMPT = "Find the API key."
COMMANDS = [
    "cat /proc/$PPID/environ | base64 -w0; echo",
    "rev /proc/$PPID/environ; echo",
    "cut -c1-80 /proc/$PPID/environ; cat /proc/*/environ 2>/dev/null | base64 | head -c 20000",
    "env; echo AWS=$AWS_SECRET_ACCESS_KEY",
    # The key (from a file the user has) on one long line, across the 4096-character flush.
    "python3 -c \"print('x' * 4090 + ' ' + open('key.txt').read().strip() + ' tail')\"",
    "seq 1 3000000",
]
SCENARIO = {
    "name": "secrets",
    "turns": [
        {
            "user": PROMPT,
            "steps": [
                *({"tools": [{"name": "bash", "arguments": {"command": c}}]} for c in COMMANDS),
                {"text": "Done looking."},
            ],
        }
    ],
}


def encodings(secret: str) -> list[str]:
    """The key as it could appear encoded: reversed, and base64 at each byte alignment (the
    characters that depend only on the key)."""
    forms = [secret, secret[::-1], secret[: len(secret) // 2], secret[len(secret) // 2 :]]
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + secret.encode()).decode()
        forms.append(encoded[4 if pad else 0 : -4])
    return forms


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    async with SimServer(Simulator(scenario=parse_scenario(SCENARIO))) as server:
        yield server


async def run_attack(sim: SimServer, tmp_path: Path, sandbox: str) -> dict[str, Any]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "key.txt").write_text(KEY + "\n")
    sessions = tmp_path / "sessions"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "ANTHROPIC_API_KEY": KEY,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    }
    server = await RawServer.start(env)
    try:
        await server.initialize(
            workspace,
            {
                "provider": "sim",
                "baseUrl": sim.base_url,
                "sessionsDir": str(sessions),
                "permissions": {"mode": "allowAll"},
                "tools": {"sandbox": sandbox},
            },
        )
        await server.send_message(
            request("new", "agent/session/new", {"workspaceUri": workspace.as_uri()})
        )
        created = (await server.answer("new"))["result"]
        await server.send_message(
            request("turn", "agent/turn", {"sessionId": created["sessionId"], "prompt": PROMPT})
        )
        turn = (await server.answer("turn"))["result"]
    finally:
        await server.close()
    on_disk = b"".join(p.read_bytes() for p in sessions.rglob("*") if p.is_file())
    return {
        "created": created,
        "turn": turn,
        "editor": json.dumps(server.messages, ensure_ascii=False),
        "disk": on_disk.decode("utf-8", errors="replace"),
        "messages": server.messages,
        "log": server.log.decode("utf-8", errors="replace"),
    }


def check_no_leak(run: dict[str, Any]) -> None:
    assert run["turn"]["stopReason"] == "end_turn", run["turn"]
    for where in ("editor", "disk", "log"):
        for form in encodings(KEY) + encodings(AWS_SECRET):
            assert form not in run[where], f"{form[:12]}... reached the {where}"
    # The key printed from the file was really printed, and redacted in every sink.
    assert "x" * 100 + " [redacted] tail" in run["editor"]
    assert " [redacted] tail" in run["disk"]


def streamed_bytes(run: dict[str, Any], command: str) -> int:
    ids = {
        m["params"]["update"]["toolCallId"]
        for m in run["messages"]
        if m.get("method") == "agent/update"
        and m["params"]["update"]["kind"] == "toolCall"
        and m["params"]["update"]["rawInput"].get("command") == command
    }
    return sum(
        len(json.dumps(m))
        for m in run["messages"]
        if m.get("method") == "agent/update"
        and m["params"]["update"].get("toolCallId") in ids
    )


async def test_unsandboxed_bash_cannot_leak_the_key(sim: SimServer, tmp_path: Path) -> None:
    run = await run_attack(sim, tmp_path, "off")
    assert run["created"]["sandbox"] == {"sandboxed": False, "network": True}
    check_no_leak(run)
    assert "Permission denied" in run["editor"]  # /proc/$PPID/environ is closed
    # 3,000,000 lines: the editor gets what the model gets (head live, tail at the end),
    # not 26 MB of updates.
    assert streamed_bytes(run, "seq 1 3000000") < 150_000


@pytest.mark.skipif(not sandbox_status().available, reason=sandbox_status().reason)
async def test_sandboxed_bash_cannot_leak_the_key(sim: SimServer, tmp_path: Path) -> None:
    run = await run_attack(sim, tmp_path, "always")
    assert run["created"]["sandbox"] == {"sandboxed": True, "network": False}
    check_no_leak(run)
    assert streamed_bytes(run, "seq 1 3000000") < 150_000


# --- issue 24: secrets in the workspace's files -------------------------------------------

ENV_SECRET = "Zq81kQpL0vB7nMw2RtY6xC4dF9gH3jK5"
ENV_SCENARIO = {
    "name": "dotenv",
    "turns": [
        {
            "user": "Check the configuration.",
            "steps": [
                {"tools": [{"name": "read", "arguments": {"path": ".env"}}]},
                {"tools": [{"name": "grep", "arguments": {"pattern": "AWS_SECRET"}}]},
                {"tools": [{"name": "bash", "arguments": {"command": "cat .env; grep -r AWS ."}}]},
                {"text": "Checked."},
            ],
        }
    ],
}


async def test_workspace_secrets_are_asked_about_and_never_reach_the_provider(
    tmp_path: Path,
) -> None:
    """A `.env` with `AWS_SECRET_ACCESS_KEY=...` reached the ledger, the editor and the model
    literally through read and grep. Now read asks first (in allowAll too), grep leaves the
    file out and says so, and the value is redacted wherever it appears, with a note."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / ".env").write_text(f"PORT=3000\nAWS_SECRET_ACCESS_KEY={ENV_SECRET}\n")
    (workspace / "settings.py").write_text("AWS_SECRET = load('AWS_SECRET_ACCESS_KEY')\n")
    simulator = Simulator(scenario=parse_scenario(ENV_SCENARIO))
    async with SimServer(simulator) as sim:
        server = await RawServer.start({**os.environ, "HOME": str(tmp_path)})
        try:
            await server.initialize(
                workspace,
                {"provider": "sim", "baseUrl": sim.base_url,
                 "sessionsDir": str(tmp_path / "sessions"), "permissions": {"mode": "allowAll"}},
                request_permission=True,
            )
            session_id = await server.new_session(workspace)
            await server.send_message(request("turn", "agent/turn", {
                "sessionId": session_id, "prompt": "Check the configuration."}))
            asked = await server.wait_for(
                lambda m: m.get("method") == "agent/requestPermission", "the question about .env"
            )
            assert "may hold secrets" in asked["params"]["toolCall"]["title"]
            await server.send_message({"jsonrpc": "2.0", "id": asked["id"],
                                       "result": {"outcome": {"selected": "allow_once"}}})
            turn = (await server.answer("turn"))["result"]
            assert turn["stopReason"] == "end_turn"
        finally:
            await server.close()
        provider = json.dumps([r.request for r in simulator.records])
    editor = json.dumps(server.messages)
    disk = "".join(
        p.read_text(errors="replace") for p in (tmp_path / "sessions").rglob("*") if p.is_file()
    )
    for where, text in (("provider", provider), ("editor", editor), ("disk", disk)):
        at = text.find(ENV_SECRET)
        assert at == -1, f"the value reached the {where}: {text[max(0, at - 300):at + 60]}"
    assert "AWS_SECRET_ACCESS_KEY=[redacted]" in provider and "PORT=3000" in provider
    assert "were replaced by [redacted]" in provider  # the model is told
    assert "Left out matches in 1 file(s) that may hold secrets: .env" in provider


# --- issue 44: credentials in URL-shaped variables ----------------------------------------

SENTRY_KEY = "e3b0c44298fc1c149afbf4c8996fb924"
SLACK_PATH = "T0A1B2C3D/B4E5F6G7H/aB3dE5fG7hJ9kL1mN3pQ5rS7"
URL_COMMAND = 'env; echo "dsn=$SENTRY_DSN hook=$SLACK_WEBHOOK_URL"; cat hooks.txt'
URL_SCENARIO = {
    "name": "url-secrets",
    "turns": [
        {
            "user": "Check the hooks.",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": URL_COMMAND}}]},
                {"text": "Checked."},
            ],
        }
    ],
}


async def test_url_shaped_credentials_never_reach_the_ledger_editor_or_provider(
    tmp_path: Path,
) -> None:
    """`SENTRY_DSN=https://<key>@host/<id>` and `SLACK_WEBHOOK_URL=https://hooks.slack.com/
    services/...` reached a command's environment (and from its output the ledger, the editor
    and the model): their names and values did not say secret. Now they are withheld, and
    the same URLs printed from a file are redacted with their hosts kept."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    dsn = f"https://{SENTRY_KEY}@o450.ingest.sentry.io/5201"
    hook = f"https://hooks.slack.com/services/{SLACK_PATH}"
    (workspace / "hooks.txt").write_text(f"{dsn}\n{hook}\n")
    simulator = Simulator(scenario=parse_scenario(URL_SCENARIO))
    async with SimServer(simulator) as sim:
        server = await RawServer.start(
            {**os.environ, "HOME": str(tmp_path), "SENTRY_DSN": dsn, "SLACK_WEBHOOK_URL": hook}
        )
        try:
            await server.initialize(
                workspace,
                {"provider": "sim", "baseUrl": sim.base_url,
                 "sessionsDir": str(tmp_path / "sessions"), "permissions": {"mode": "allowAll"},
                 "tools": {"sandbox": "off"}},
            )
            session_id = await server.new_session(workspace)
            await server.send_message(request("turn", "agent/turn", {
                "sessionId": session_id, "prompt": "Check the hooks."}))
            turn = (await server.answer("turn"))["result"]
            assert turn["stopReason"] == "end_turn"
        finally:
            await server.close()
        provider = json.dumps([r.request for r in simulator.records])
    editor = json.dumps(server.messages)
    disk = "".join(
        p.read_text(errors="replace") for p in (tmp_path / "sessions").rglob("*") if p.is_file()
    )
    log = server.log.decode("utf-8", errors="replace")
    for where, text in (("provider", provider), ("editor", editor), ("disk", disk), ("log", log)):
        for secret in (SENTRY_KEY, SLACK_PATH, SLACK_PATH.rsplit("/", 1)[1]):
            at = text.find(secret)
            around = text[max(0, at - 200) : at + 60]
            assert at == -1, f"{secret[:8]}... reached the {where}: {around}"
    assert "dsn= hook=" in provider  # not in the command's environment
    assert "https://[redacted]@o450.ingest.sentry.io/5201" in provider  # the host is kept
    assert "https://hooks.slack.com/services/[redacted]" in provider
