"""Bash through the editor's terminal (`terminal/*`), over real stdio with the ACP Python SDK's
client, which runs each command it is given itself, as an editor does: in its own
environment plus the `env` it is sent, its output kept up to `outputByteLimit`.

Checked: the command line the editor runs is the sandboxed one (bubblewrap, the protected
paths, the limits), its environment holds no secret of the agent's nor any of the editor's
own, the card shows the terminal, the model gets what a local run gives it (byte for byte
but for the saved file's name), and the timeout and a cancel kill and release the terminal.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from agent_server.acp.terminal import LOST, OutputReader, exit_code
from agent_server.agent.tools.limits import cgroup_roots
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.acp.conftest import AcpProcess, RecordingClient, acp_args, start_acp
from tests.acp.test_acp_edges import all_closed, scripted
from tests.acp.test_acp_session import wait_for
from tests.agent.mcp_tools.conftest import call, turn

AGENT_SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # in the agent's environment
EDITOR_SECRET = "editor-only-value-7f3a"  # in the editor's own environment


@dataclass
class Running:
    process: asyncio.subprocess.Process
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk
            if len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]
                self.truncated = True


@dataclass
class TerminalClient(RecordingClient):
    """An editor with terminals: it runs the command itself, with its own environment plus
    the request's `env` (as Zed does), and answers the five `terminal/*` methods."""

    own_env: dict[str, str] = field(default_factory=lambda: {"EDITOR_TOKEN": EDITOR_SECRET})
    created: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    running: dict[str, Running] = field(default_factory=dict)
    create_delay: float = 0.0  # seconds the editor takes to start a command
    release_hangs: bool = False  # an editor that never answers terminal/release
    # Per release: whether the output was still open 5 s after it (a process left of the
    # command holds it); the editor answers the release only then.
    open_at_release: list[bool] = field(default_factory=list)

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        given = {variable.name: variable.value for variable in env or []}
        self.created.append({"command": command, "args": args or [], "env": given, "cwd": cwd})
        await asyncio.sleep(self.create_delay)
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env={**os.environ, **self.own_env, **given},
            stdin=asyncio.subprocess.PIPE,  # an editor's terminal has an input
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal_id = f"term-{len(self.created)}"
        run = Running(process, output_byte_limit or 1 << 20)
        run.reader = asyncio.ensure_future(run.read())
        self.running[terminal_id] = run
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _run(self, method: str, terminal_id: str) -> Running:
        self.calls.append((method, terminal_id))
        run = self.running.get(terminal_id)
        if run is None:
            raise RequestError.invalid_params({"terminalId": terminal_id})
        return run

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        run = self._run("output", terminal_id)
        code = run.process.returncode
        return TerminalOutputResponse(
            output=run.output.decode("utf-8", errors="replace"),
            truncated=run.truncated,
            exit_status=None if code is None else TerminalExitStatus(**_status(code)),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        run = self._run("wait_for_exit", terminal_id)
        code = await run.process.wait()
        assert run.reader is not None
        await asyncio.wait({run.reader}, timeout=60)
        return WaitForTerminalExitResponse(**_status(code))

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        run = self._run("kill", terminal_id)
        if run.process.returncode is None:
            run.process.kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        run = self._run("release", terminal_id)
        if self.release_hangs:
            await asyncio.Event().wait()
        if run.process.returncode is None:
            run.process.kill()
        await run.process.wait()
        assert run.reader is not None
        await asyncio.wait({run.reader}, timeout=60)
        self.open_at_release.append(not run.reader.done())
        del self.running[terminal_id]
        return ReleaseTerminalResponse()

    def methods(self, terminal_id: str) -> list[str]:
        return [method for method, tid in self.calls if tid == terminal_id]


def _status(code: int) -> dict[str, Any]:
    if code < 0:
        return {"exit_code": None, "signal": signal.Signals(-code).name}
    return {"exit_code": code, "signal": None}


def model_results(simulator: Simulator) -> list[str]:
    """The tool results the model got, in the last request it was sent."""
    body = simulator.records[-1].request
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "tool_result":
                content = node.get("content")
                if isinstance(content, str):
                    found.append(content)
                else:
                    found.append("".join(b.get("text", "") for b in content or []))
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(body.get("messages", []))
    return found


async def run_command(
    tmp_path: Path, workspace: Path, command: str, *, terminal: bool, mode: str = "allowAll",
    config: dict[str, Any] | None = None, client: TerminalClient | None = None,
    **arguments: Any,
) -> tuple[TerminalClient, Simulator, AcpProcess]:
    simulator = scripted(turn("Run it.", call("bash", command=command, **arguments)))
    client = client or TerminalClient()
    home = tmp_path / ("terminal" if terminal else "local")
    home.mkdir()
    extra = ["--mode", mode]
    if config is not None:
        (home / "config.json").write_text(json.dumps(config))
        extra += ["--config", str(home / "config.json")]
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, home, *extra), home, client, terminal=terminal) as acp,
    ):
        sid = await acp.new_session(workspace)
        answer = await asyncio.wait_for(acp.prompt(sid, "Run it."), 120)
        assert answer.stop_reason == "end_turn"
    return client, simulator, acp


def only_result(client: TerminalClient) -> Any:
    (result,) = client.tool_results().values()
    return result


@pytest.fixture(autouse=True)
def agent_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token in the agent's environment (a command must never see it) and a variable that
    is no secret (a command sees it, locally and in the editor)."""
    monkeypatch.setenv("GITHUB_TOKEN", AGENT_SECRET)
    monkeypatch.setenv("AGENT_SERVER_TEST_VISIBLE", "plain-value")


async def test_the_editor_runs_the_sandboxed_command_line_and_shows_its_terminal(
    workspace: Path, tmp_path: Path
) -> None:
    command = "env; exit 3"
    client, _sim, _acp = await run_command(tmp_path, workspace, command, terminal=True)
    (created,) = client.created
    args = created["args"]
    # bubblewrap, no network, the workspace writable, a protected path read-only, then the
    # model's command as bash -c.
    bwrap = args.index(next(a for a in args if a.endswith("/bwrap")))
    assert "--unshare-net" in args[bwrap:] and "--die-with-parent" in args[bwrap:]
    assert ["--bind", str(workspace), str(workspace)] == args[
        args.index("--bind", bwrap) : args.index("--bind", bwrap) + 3
    ]
    protected = args.index(str(workspace / ".mcp.json"))
    assert args[protected - 2] == "--ro-bind"
    assert args[-1] == command and args[args.index("--", bwrap) + 1] == "bash"
    assert created["cwd"] == str(workspace)
    # Neither the agent's secret (its name or its value) nor the editor's own variables.
    assert "GITHUB_TOKEN" not in created["env"]
    assert AGENT_SECRET not in json.dumps(created)
    assert created["env"]["AGENT_SERVER_TEST_VISIBLE"] == "plain-value"
    assert client.methods("term-1")[-1] == "release" and not client.running
    result = only_result(client)
    assert result.status == "failed"
    assert [c.type for c in result.content] == ["terminal"]
    assert result.content[0].terminal_id == "term-1"
    assert result.raw_output["exitCode"] == 3
    shown = [u for u in client.of("tool_call_update") if u.status == "in_progress" and u.content]
    assert shown and shown[0].content[0].terminal_id == "term-1"


async def test_the_model_gets_what_a_local_run_gives_it(workspace: Path, tmp_path: Path) -> None:
    # Long enough to be cut to its tail and saved in full; stderr merged; a non-zero exit.
    command = (
        "for i in $(seq 1 3000); do echo \"line $i $AGENT_SERVER_TEST_VISIBLE\"; done; "
        "echo to-stderr >&2; env | grep -c -e EDITOR_TOKEN -e GITHUB_TOKEN; "
        "echo token:$GITHUB_TOKEN; exit 3"
    )
    results = []
    for terminal in (True, False):
        client, simulator, _acp = await run_command(
            tmp_path, workspace, command, terminal=terminal
        )
        assert bool(client.created) is terminal
        (text,) = model_results(simulator)
        saved = re.search(r"(/\S+/bash-\S+?\.(?:log|txt))", text)
        assert saved is not None, text
        full = await asyncio.to_thread(Path(saved.group(1)).read_text)
        results.append((text.replace(saved.group(1), "SAVED"), full))
    (terminal_text, terminal_full), (local_text, local_full) = results
    assert terminal_text == local_text
    assert terminal_full == local_full
    assert "line 3000 plain-value" in terminal_text and "to-stderr" in terminal_text
    assert "\nto-stderr\n0\ntoken:\n" in terminal_text  # merged, and no token
    assert "Exit code 3." in terminal_text
    assert "line 1 plain-value" in terminal_full


async def test_unsandboxed_commands_drop_the_editors_environment_too(
    workspace: Path, tmp_path: Path
) -> None:
    command = "env | grep -c -e EDITOR_TOKEN -e GITHUB_TOKEN; cat; echo input-done"
    client, simulator, _acp = await run_command(
        tmp_path, workspace, command, terminal=True, mode="allowAll",
        config={"tools": {"sandbox": "off"}},
    )
    (created,) = client.created
    assert not any(arg.endswith("/bwrap") for arg in created["args"])
    (text,) = model_results(simulator)
    # No variable of either, and no input (the editor's terminal has one: the command
    # reads /dev/null, as a local run does, instead of waiting).
    assert text.startswith("0\ninput-done"), text


async def test_a_sandbox_with_network_runs_here(workspace: Path, tmp_path: Path) -> None:
    """Its seccomp filter is a descriptor no command line can carry: the command runs as
    the server's child, as for an editor without terminals."""
    client, simulator, _acp = await run_command(
        tmp_path, workspace, "echo ran-here", terminal=True,
        config={"tools": {"network": True}},
    )
    assert client.created == []
    assert model_results(simulator)[0].startswith("ran-here")


async def test_the_timeout_kills_and_releases_the_terminal(
    workspace: Path, tmp_path: Path
) -> None:
    client, simulator, _acp = await run_command(
        tmp_path, workspace, "echo started; sleep 120", terminal=True, timeout=5
    )  # 5 s: time for the command to start and print on a busy machine
    assert "kill" in client.methods("term-1") and client.methods("term-1")[-1] == "release"
    (text,) = model_results(simulator)
    assert text.startswith("started") and "timed out after 5 seconds" in text
    assert only_result(client).raw_output["timedOut"] is True


def still_running(marker: str) -> list[str]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if marker in line:
            found.append(f"{entry.name}: {line}")
    return found


async def test_what_the_editors_kill_leaves_of_a_timed_out_command_is_killed(
    workspace: Path, tmp_path: Path
) -> None:
    """An editor kills the terminal's first process: a background job (or a sandbox not yet
    bound to die with it) would run on; the agent kills the rest in the command's cgroup,
    before it releases the terminal (an editor that answers a release once the output
    closes would wait for the background job, which holds the output open)."""
    if cgroup_roots().pids is None and cgroup_roots().memory is None:
        pytest.skip("no cgroup can be made here: only the editor's kill applies")
    command = "sleep 1311 & echo started; sleep 1312"
    client, _simulator, _acp = await run_command(
        tmp_path, workspace, command, terminal=True, timeout=2,
        config={"tools": {"sandbox": "off"}}, client=TerminalClient(),
    )
    assert client.methods("term-1")[-1] == "release"
    assert client.open_at_release == [False]
    for _ in range(1200):  # a hang guard, for a busy machine
        if not still_running("sleep 131"):
            break
        await asyncio.sleep(0.05)
    assert still_running("sleep 131") == []


async def cancel_a_command(
    tmp_path: Path, workspace: Path, client: TerminalClient, command: str,
    started: Callable[[], bool], config: dict[str, Any] | None = None,
) -> tuple[AcpProcess, Running | None]:
    """`command` run in `client`'s terminal, its turn cancelled once `started()` holds: the
    prompt answers `cancelled` and the terminal is released. The agent and what ran in the
    terminal first."""
    simulator = scripted(turn("Wait a while.", call("bash", command=command)))
    extra = ["--mode", "allowAll"]
    if config is not None:
        (tmp_path / "config.json").write_text(json.dumps(config))
        extra += ["--config", str(tmp_path / "config.json")]
    async with (
        SimServer(simulator) as sim,
        start_acp(acp_args(sim, tmp_path, *extra), tmp_path, client, terminal=True) as acp,
    ):
        sid = await acp.new_session(workspace)
        running = asyncio.ensure_future(acp.prompt(sid, "Wait a while."))
        await wait_for(started)
        ran = client.running.get("term-1")
        await acp.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(running, 60)).stop_reason == "cancelled"
        await wait_for(lambda: "release" in client.methods("term-1"))
    return acp, ran


async def test_a_cancel_kills_and_releases_the_terminal(workspace: Path, tmp_path: Path) -> None:
    client = TerminalClient()
    acp, ran = await cancel_a_command(
        tmp_path, workspace, client, "sleep 120",
        lambda: "wait_for_exit" in client.methods("term-1"),
    )
    assert "kill" in client.methods("term-1")
    assert ran is not None and await asyncio.wait_for(ran.process.wait(), 30) != 0
    assert all_closed(acp)


async def test_a_cancel_while_the_editor_starts_the_command_kills_it_once_started(
    workspace: Path, tmp_path: Path
) -> None:
    client = TerminalClient(create_delay=1.0)
    await cancel_a_command(tmp_path, workspace, client, "sleep 1313", lambda: bool(client.created))
    assert client.methods("term-1")[:2] == ["kill", "release"]
    assert still_running("sleep 1313") == []


async def test_a_cancel_kills_what_is_left_of_the_command_before_the_release(
    workspace: Path, tmp_path: Path
) -> None:
    if cgroup_roots().pids is None and cgroup_roots().memory is None:
        pytest.skip("no cgroup can be made here: only the editor's kill applies")
    client = TerminalClient()
    await cancel_a_command(
        tmp_path, workspace, client, "sleep 1515 & echo started; sleep 1516",
        lambda: "term-1" in client.running and b"started" in client.running["term-1"].output,
        config={"tools": {"sandbox": "off"}},  # a sandbox dies whole with its first process
    )
    assert client.methods("term-1")[-2:] == ["kill", "release"]
    assert client.open_at_release == [False]
    assert still_running("sleep 151") == []


async def test_a_cancel_ends_the_turn_when_the_editor_never_answers_the_release(
    workspace: Path, tmp_path: Path
) -> None:
    """The editor is asked to kill and release the terminal; its answers are waited for a
    while (KILL_WAIT), not forever: the turn ends cancelled and what ran is killed."""
    client = TerminalClient(release_hangs=True)
    await cancel_a_command(
        tmp_path, workspace, client, "sleep 1717",
        lambda: "wait_for_exit" in client.methods("term-1"),
    )
    assert client.methods("term-1")[-2:] == ["kill", "release"]
    for _ in range(1200):  # a hang guard, for a busy machine
        if not still_running("sleep 1717"):
            break
        await asyncio.sleep(0.05)
    assert still_running("sleep 1717") == []


async def test_a_client_without_terminals_runs_commands_here(
    workspace: Path, tmp_path: Path
) -> None:
    client, simulator, _acp = await run_command(tmp_path, workspace, "echo here", terminal=False)
    assert client.created == [] and client.calls == []
    result = only_result(client)
    assert [c.type for c in result.content] == ["content"]
    assert model_results(simulator)[0].startswith("here")


@pytest.mark.parametrize("sandbox", ["always", "off"])
async def test_the_limits_hold_in_the_editors_terminal(
    workspace: Path, tmp_path: Path, sandbox: str
) -> None:
    command = (
        "head -c 3000000 /dev/zero > big.bin; echo written:$?; stat -c %s big.bin; "
        "ulimit -t; rm big.bin"
    )
    limits = {"fileSizeMB": 1, "cpuSeconds": 77}
    client, simulator, _acp = await run_command(
        tmp_path, workspace, command, terminal=True,
        config={"tools": {"sandbox": sandbox, "limits": limits}},
    )
    assert client.created
    (text,) = model_results(simulator)
    # head is stopped at 1 MB (SIGXFSZ: 128 + 25), and the CPU limit is set.
    assert "written:153\n1048576\n77\n" in text, text


def test_the_output_read_again_gives_only_what_is_new() -> None:
    pieces: list[str] = []
    reader = OutputReader(pieces.append)
    full = "".join(f"line {i}\n" for i in range(3000))
    reader.take(full[:100])
    reader.take(full[:9000])
    reader.take(full[:9000])  # nothing new: nothing given
    # The editor dropped the beginning (past its byte limit): what follows the last read.
    reader.take(full[4000:15000])
    reader.take(full[10000:20000])
    assert "".join(pieces) == full[:20000] and len(pieces) == 4
    # Dropped past the last read as well: said, not hidden.
    reader.take(full[21000:25000])
    assert pieces[-1] == LOST + full[21000:25000]


def test_a_repeating_output_past_the_editors_limit_aligns_on_its_newest_overlap() -> None:
    """Thousands of identical lines, then new ones, read after the editor dropped the
    beginning: the new lines come out once (one search, however often the text repeats)."""
    pieces: list[str] = []
    reader = OutputReader(pieces.append)
    same = "WARN the same warning again\n" * 20000
    fresh = "".join(f"line {i}\n" for i in range(500))
    reader.take(same)
    reader.take(same[len(same) // 2 :] + fresh)
    reader.take(same[len(same) - 100 :] + fresh + "done\n")
    assert "".join(pieces) == same + fresh + "done\n"


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ({"exit_code": 0}, 0),
        ({"exit_code": 3}, 3),
        ({"signal": "SIGKILL"}, -9),
        ({"signal": "TERM"}, -15),
        ({"signal": "SIGNOPE"}, None),
        ({}, None),
    ],
)
def test_the_exit_status_reads_as_a_local_one(status: dict[str, Any], code: int | None) -> None:
    assert exit_code(WaitForTerminalExitResponse(**status)) == code
