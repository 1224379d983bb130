"""The editor kills the language server (SIGTERM) during a turn, or closes its input, or
sends `shutdown`, rather than waiting for the turn: the server closes its sessions, so that the
command the turn runs (in a process group of its own, ignoring SIGTERM) is stopped, not left
running with no one to stop it, and the turn's end is in the ledger; the `agent/turn` request
under way is answered (its result, cancelled) before the process exits. A signal's exit status
is 128 + the signal.

Raw LSP over real stdio (the answers read from a file, so that nothing waits on a full
pipe), against the simulator over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer, ThreadedSimServer
from agent_server.sim.simulator import Simulator
from tests.stubborn_command import (
    PROMPT,
    SCENARIO,
    group_running,
    last_ledger_message,
    wait_for_group,
)


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedSimServer]:
    handle = SimServer(Simulator(scenario=parse_scenario(SCENARIO))).run_in_thread()
    yield handle
    handle.stop()


def send(stdin: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdin.flush()


def answers(output: Path) -> list[dict[str, Any]]:
    """The answers (not requests or notifications) the server has written so far, in order."""
    data, found = output.read_bytes(), []
    while b"\r\n\r\n" in data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b"\r\n")[0].split(b":")[1])
        if len(rest) < length:
            break
        message = json.loads(rest[:length])
        if "id" in message and "method" not in message:
            found.append(message)
        data = rest[length:]
    return found


def answer(output: Path, request_id: int) -> dict[str, Any]:
    """The server's answer to `request_id`, once it has written it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for message in answers(output):
            if message["id"] == request_id:
                return message
        time.sleep(0.1)
    raise AssertionError(f"no answer to request {request_id}")


@contextmanager
def running_turn(
    sim: ThreadedSimServer, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], Path, int]]:
    """The server, its output file, and the process group of the command its turn (request
    3) runs; the server is killed on the way out if it is still running."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = {
        "provider": "sim",
        "baseUrl": sim.base_url,
        "sessionsDir": str(tmp_path / "sessions"),
        "permissions": {"mode": "allowAll"},
        "tools": {"sandbox": "off"},
    }
    output = tmp_path / "stdout"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    with output.open("wb") as stdout, (tmp_path / "stderr").open("wb") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-m", "agent_server", "serve", "--trust-editor-settings"],
            stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, env=env,
        )
    assert server.stdin is not None
    try:
        send(server.stdin, {"id": 1, "method": "initialize", "params": {
            "capabilities": {},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": "ws"}],
            "initializationOptions": {"settings": settings},
        }})
        answer(output, 1)
        send(server.stdin, {"method": "initialized", "params": {}})
        send(server.stdin, {"id": 2, "method": "agent/session/new",
                            "params": {"workspaceUri": workspace.as_uri()}})
        session_id = answer(output, 2)["result"]["sessionId"]
        send(server.stdin, {"id": 3, "method": "agent/turn",
                            "params": {"sessionId": session_id, "prompt": PROMPT}})
        yield server, output, wait_for_group(workspace)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if not server.stdin.closed:
            server.stdin.close()


def assert_turn_ended(tmp_path: Path, output: Path, pgid: int) -> None:
    """The turn (request 3) was answered, cancelled; its command is stopped; its end saved."""
    turn = answer(output, 3)
    assert turn.get("result", {}).get("stopReason") == "cancelled", turn
    assert not group_running(pgid)
    last = last_ledger_message(tmp_path / "sessions")
    assert last["role"] == "toolResult" and last["toolName"] == "bash", last


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_a_turn_stops_its_command_and_ends_the_server(
    sim: ThreadedSimServer, tmp_path: Path, number: signal.Signals
) -> None:
    with running_turn(sim, tmp_path) as (server, output, pgid):
        server.send_signal(number)
        status = server.wait(60)
    assert status == 128 + number, (tmp_path / "stderr").read_text()
    assert_turn_ended(tmp_path, output, pgid)


def test_the_input_ending_during_a_turn_answers_it_and_ends_the_server(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    """An editor that closes the server's stdin (no shutdown, no exit) but still reads its
    stdout gets the turn's answer."""
    with running_turn(sim, tmp_path) as (server, output, pgid):
        assert server.stdin is not None
        server.stdin.close()
        status = server.wait(60)
    assert status == 0, (tmp_path / "stderr").read_text()
    assert_turn_ended(tmp_path, output, pgid)


def test_shutdown_during_a_turn_ends_it_before_shutdown_is_answered(
    sim: ThreadedSimServer, tmp_path: Path
) -> None:
    with running_turn(sim, tmp_path) as (server, output, pgid):
        assert server.stdin is not None
        send(server.stdin, {"id": 4, "method": "shutdown"})
        assert answer(output, 4) == {"jsonrpc": "2.0", "id": 4, "result": None}
        # The turn was answered first, and its end saved, before shutdown's answer.
        assert [a["id"] for a in answers(output)] == [1, 2, 3, 4]
        assert last_ledger_message(tmp_path / "sessions")["role"] == "toolResult"
        send(server.stdin, {"method": "exit"})
        status = server.wait(60)
    assert status == 0, (tmp_path / "stderr").read_text()
    assert_turn_ended(tmp_path, output, pgid)
