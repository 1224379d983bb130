"""The forked agent the LSP and ACP tests drive stands for `python -m agent_server`: the same
output, exit status and signals, and it does not outlive its launcher."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

from tests import forked_agent

REAL = [sys.executable, "-m", "agent_server"]


def test_a_forked_agent_prints_and_exits_as_the_real_one() -> None:
    for args in (["--help"], ["no-such-command"], ["sessions", "--help"]):
        forked = subprocess.run(forked_agent.command(*args), capture_output=True, timeout=300)
        real = subprocess.run([*REAL, *args], capture_output=True, timeout=300)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            real.returncode, real.stdout, real.stderr
        ), args


def _serve(command: list[str]) -> subprocess.Popen[bytes]:
    """`serve`, once it has answered `initialize` (running: its signal handlers are set)."""
    process = subprocess.Popen(
        [*command, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": None, "capabilities": {}}}
    ).encode()
    process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    process.stdin.flush()
    length = 0
    while (line := process.stdout.readline().strip()) != b"":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    assert json.loads(process.stdout.read(length))["id"] == 1
    return process


def _ended(process: subprocess.Popen[bytes]) -> bool:
    """Whether the agent's stdout reaches its end (only the agent holds it), whatever it
    writes before; a hang guard of 120 s."""
    assert process.stdout is not None
    fd, deadline = process.stdout.fileno(), time.monotonic() + 120
    while select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        if os.read(fd, 1 << 16) == b"":
            return True
    return False


def test_a_signal_to_the_launcher_reaches_the_agent() -> None:
    endings = []
    for command in (forked_agent.command(), REAL):
        process = _serve(command)
        process.send_signal(signal.SIGTERM)
        endings.append(process.wait(timeout=120))
        assert process.stdin is not None
        process.stdin.close()
    assert endings[0] == endings[1]


def test_an_agent_does_not_outlive_its_killed_launcher() -> None:
    process = _serve(forked_agent.command())
    assert process.stdout is not None and process.stdin is not None
    process.kill()
    process.wait(timeout=120)
    assert _ended(process)  # stdin still open: the agent did not end by itself
    process.stdin.close()


def test_an_agent_ends_when_its_input_closes_with_the_real_ones_status() -> None:
    process = _serve(forked_agent.command())
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=120) == subprocess.run(
        [*REAL, "serve"], stdin=subprocess.DEVNULL, capture_output=True, timeout=300
    ).returncode
    assert _ended(process)
