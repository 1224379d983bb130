"""The first requests of a server need no provider SDK: a session is made, restored, paged and
listed without one (issue 31). The SDK loads in the background once a session is shown, and
the first model call waits for it.

Over real stdio, with the SDKs made unimportable in the server's process (a `sitecustomize`
that refuses `anthropic` and `openai`): everything an editor does at start is answered; the
first turn is the first request that needs the SDK, and it says so and what to do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.hardening.raw import RawServer, request

NO_SDK = textwrap.dedent(
    """
    import sys

    class NoSdk:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("anthropic", "openai"):
                raise ImportError(f"{name} is not importable in this test")
            return None

    sys.meta_path.insert(0, NoSdk())
    """
)


def without_sdks(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that cannot import the provider SDKs."""
    site = tmp_path / "no-sdk"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_SDK, "utf-8")
    return {**os.environ, "PYTHONPATH": str(site), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _result(answer: dict[str, Any]) -> Any:
    assert "result" in answer, answer
    return answer["result"]


async def test_a_session_is_made_restored_and_paged_without_a_provider_sdk(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    settings = {
        "provider": "anthropic",
        "baseUrl": "http://127.0.0.1:9",  # never called: nothing here calls a model
        "sessionsDir": str(tmp_path / "sessions"),
    }
    server = await RawServer.start(without_sdks(tmp_path))
    try:
        await server.initialize(workspace, settings)
        uri = workspace.as_uri()
        await server.send_message(request("new", "agent/session/new", {"workspaceUri": uri}))
        session_id = _result(await server.answer("new"))["sessionId"]
        await server.send_message(request("list", "agent/session/list", {"workspaceUri": uri}))
        listed = _result(await server.answer("list"))
        assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
        for number, method in enumerate(("agent/session/load", "agent/usage", "agent/model/list")):
            await server.send_message(request(number, method, {"sessionId": session_id}))
            _result(await server.answer(number))
        # The first model call is what needs the SDK: the turn fails saying why and what to do.
        await server.send_message(
            request("turn", "agent/turn", {"sessionId": session_id, "prompt": "Hello"})
        )
        answer = await server.answer("turn")
        failure = json.dumps(answer)
        assert "Cannot load the SDK" in failure and "reinstall" in failure, answer
        assert "Traceback" not in server.log.decode(errors="replace")
    finally:
        await server.close()
    # The session survives: a fresh server (with its SDK) restores it.
    server = await RawServer.start()
    try:
        await server.initialize(workspace, settings)
        await server.send_message(
            request("load", "agent/session/load", {"sessionId": session_id})
        )
        loaded = _result(await server.answer("load"))
        assert loaded["sessionId"] == session_id
    finally:
        await server.close()


def test_acp_makes_and_loads_a_session_without_a_provider_sdk(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": 1, "clientCapabilities": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new",
         "params": {"cwd": str(workspace), "mcpServers": []}},
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_server", "acp", "--provider", "anthropic",
         "--base-url", "http://127.0.0.1:9", "--sessions-dir", str(tmp_path / "sessions")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=without_sdks(tmp_path),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    answers: dict[int, Any] = {}

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    def answer(number: int) -> Any:
        assert process.stdout is not None
        while number not in answers:
            raw = process.stdout.readline()
            assert raw, "the agent closed its output"
            message = json.loads(raw)
            if message.get("id") is not None and "method" not in message:
                answers[message["id"]] = message
        assert "result" in answers[number], answers[number]
        return answers[number]["result"]

    try:
        for line in lines:
            send(line)
        session_id = answer(2)["sessionId"]
        send({"jsonrpc": "2.0", "id": 3, "method": "session/load",
              "params": {"cwd": str(workspace), "sessionId": session_id, "mcpServers": []}})
        answer(3)
    finally:
        process.stdin.close()
        process.wait(timeout=60)
        assert process.stderr is not None
        assert b"Traceback" not in process.stderr.read()
