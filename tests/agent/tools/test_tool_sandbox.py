"""bash in the bubblewrap sandbox, and the server's /proc closed to unsandboxed commands.

The sandbox tests run where bubblewrap can build a sandbox (CI installs it); elsewhere they
are skipped with the probe's reason, which is also what the editor is told.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.sandbox import Confinement, confine, confinement, sandbox_status

BASH = BashTool()
STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=STATUS.reason)

SANDBOXED = Confinement(sandboxed=True, network=False)
SCRATCH = f"agent-sandbox-scratch-{os.getpid()}"


def on_host(path: Path) -> bool:
    return path.exists()


def sandboxed_ctx(workspace: Path, spill_dir: Path, *, network: bool = False) -> ToolContext:
    return ToolContext(workspace, spill_dir, confinement=Confinement(True, network))


def test_the_settings_decide_when_to_sandbox() -> None:
    # Every command is sandboxed unless the setting is off, whatever the permission mode: an
    # approval lets a command run, not reach more.
    off = confinement("off", False)
    assert not off.sandboxed and not off.reason and not off.escapable and not off.refused
    auto = confinement("auto", False)
    always = confinement("always", True)
    if STATUS.available:
        assert auto.sandboxed and not auto.network and not auto.reason
        assert auto.escapable and not auto.refused
        assert always.sandboxed and always.network and not always.escapable
        outside = auto.outside()
        assert not outside.sandboxed and outside.network and not outside.escapable
        assert always.outside() == always  # `always` lets nothing out
    else:
        assert not auto.sandboxed and auto.reason == STATUS.reason and not auto.refused
        assert not always.sandboxed and always.reason == STATUS.reason and always.refused


async def test_always_without_a_sandbox_refuses_every_command(
    workspace: Path, spill_dir: Path
) -> None:
    refused = Confinement(False, True, "bubblewrap is not installed", strict=True)
    ctx = ToolContext(workspace, spill_dir, confinement=refused)
    result = await run_tool(BashTool(), {"command": "touch ran"}, ctx)
    assert result.is_error and "tools.sandbox is `always`" in result.text
    assert "bubblewrap is not installed" in result.text
    assert not (workspace / "ran").exists()


@needs_sandbox
async def test_a_command_that_asked_out_but_was_kept_in_says_so(
    workspace: Path, spill_dir: Path
) -> None:
    ctx = sandboxed_ctx(workspace, spill_dir)
    result = await run_tool(BashTool(), {"command": "echo hi", "outsideSandbox": True}, ctx)
    assert "hi" in result.text and "ran in the sandbox" in result.text
    assert result.details is not None and result.details["sandbox"]["sandboxed"]


@needs_sandbox
async def test_the_workspace_is_writable_and_the_rest_read_only(
    workspace: Path, spill_dir: Path
) -> None:
    # Not under /tmp: the sandbox's /tmp is private, so a write there never reaches the host.
    elsewhere = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="agent-sandbox-test-"))
    outside = elsewhere / "outside.txt"
    command = (
        "echo inside > made.txt && cat made.txt; "
        f"echo escaped > {outside} || echo refused-outside; "
        f"echo scratch > /tmp/{SCRATCH} && cat /tmp/{SCRATCH}; "
        f"touch $HOME/{SCRATCH} && echo home-private"
    )
    try:
        result = await run_tool(BASH, {"command": command}, sandboxed_ctx(workspace, spill_dir))
        assert not outside.exists()
    finally:
        shutil.rmtree(elsewhere)
    assert (workspace / "made.txt").read_text() == "inside\n"
    assert "refused-outside" in result.text
    # The home directory is a private, empty tmpfs: writable, and nothing reaches the host.
    assert "home-private" in result.text
    assert not on_host(Path.home() / SCRATCH)
    assert "scratch" in result.text  # a private /tmp is writable...
    assert not on_host(Path("/tmp") / SCRATCH)  # ...and private
    assert result.details is not None and result.details["sandbox"]["sandboxed"] is True


@needs_sandbox
async def test_the_server_is_out_of_sight(workspace: Path, spill_dir: Path) -> None:
    command = "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo; cat /proc/$PPID/cmdline | tr '\\0' ' '"
    result = await run_tool(BASH, {"command": command}, sandboxed_ctx(workspace, spill_dir))
    pids = {int(p) for p in result.text.splitlines()[0].split()}
    assert os.getpid() not in pids or len(pids) < 10  # a fresh PID namespace: a few processes
    assert len(pids) < 10
    assert sys.executable not in result.text  # the parent it sees is not this process


@needs_sandbox
async def test_no_network_unless_allowed(workspace: Path, spill_dir: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    probe = (
        "python3 -c \"import socket,sys\n"
        "try:\n"
        f"  socket.create_connection(('127.0.0.1', {port}), timeout=5); print('CONNECTED')\n"
        "except OSError as e: print('NO NETWORK', e)\""
    )
    try:
        closed = await run_tool(BASH, {"command": probe}, sandboxed_ctx(workspace, spill_dir))
        assert "NO NETWORK" in closed.text, closed.text
        opened = await run_tool(
            BASH, {"command": probe}, sandboxed_ctx(workspace, spill_dir, network=True)
        )
        assert "CONNECTED" in opened.text, opened.text
    finally:
        listener.close()


@needs_sandbox
async def test_a_timeout_ends_everything_the_command_started(
    workspace: Path, spill_dir: Path
) -> None:
    marker = f"sandbox-timeout-{os.getpid()}"
    command = f"(sleep 300; : {marker}) & setsid sleep 301 & sleep 302; : {marker}"
    ctx = ToolContext(workspace, spill_dir, bash_timeout=1, confinement=SANDBOXED)
    result = await run_tool(BASH, {"command": command}, ctx)
    assert result.is_error and "timed out" in result.text
    for _ in range(1200):  # a hang guard, for a busy machine
        if not _processes_with(marker) and not _processes_with("sleep 301"):
            break
        await asyncio.sleep(0.05)
    assert not _processes_with(marker)
    assert not _processes_with("sleep 301"), "even a new session dies with the sandbox"


def _processes_with(text: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if text.encode() in cmdline and state[state.rfind(")") + 2] != "Z":
            found.append(int(name))
    return found


# --- without the sandbox: the server's /proc is closed ---------------------------------

PROBE_SERVER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from agent_server.agent.tools import ToolContext, run_tool
    from agent_server.agent.tools.bash import BashTool
    from agent_server.agent.tools.sandbox import protect_server_process
    protect_server_process()
    ctx = ToolContext(Path(sys.argv[1]), Path(sys.argv[2]))
    command = "cat /proc/$PPID/environ | base64 -w0; echo; rev /proc/$PPID/environ; cat /proc/$PPID/environ | cut -c1-40"
    result = asyncio.run(run_tool(BashTool(), {"command": command}, ctx))
    print(result.text)
    """
)


def test_an_unsandboxed_command_cannot_read_the_servers_environment(
    workspace: Path, spill_dir: Path
) -> None:
    key = "sk-ant-api03-" + "Zq8" * 20
    env = {**os.environ, "ANTHROPIC_API_KEY": key}
    child = subprocess.run(
        [sys.executable, "-c", PROBE_SERVER, str(workspace), str(spill_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert "Permission denied" in child.stdout
    assert key not in child.stdout and key[::-1] not in child.stdout
    assert "QU5USFJPUElD" not in child.stdout  # base64 of "ANTHROPIC"


def test_the_terminal_command_line_passes_every_variable_as_it_is(workspace: Path) -> None:
    """The command line an editor's terminal runs (Launch.shell_argv) gives the command the
    variables it names with their values, whatever they are called (the preamble's own
    variables too), and only those."""
    env = {"PATH": os.environ["PATH"], "name": "N", "kept": "K", "A": "a b", "X-Y": "dropped"}
    command = 'echo "$name|$kept|$A|${#A}"; env | grep -c -e "^X-Y=" -e "^__agent_server"'
    launch = confine(["bash", "-c", command], workspace, Confinement())
    try:
        argv = launch.shell_argv(env)
        assert argv is not None
        ran = subprocess.run(argv, env={**env, "EDITOR_OWN": "x"}, capture_output=True,
                             text=True, timeout=30)
    finally:
        launch.close()
    assert ran.stdout.splitlines() == ["N|K|a b|3", "0"], ran.stderr


@needs_sandbox
async def test_secret_files_are_shown_empty_whatever_reads_them(
    workspace: Path, spill_dir: Path
) -> None:
    """Issue 44, item 7: `base64 .env` or `rev .env` sent the workspace's secrets to the
    provider past the redaction (no key shape left). In the sandbox a file that commonly holds
    secrets is empty and read-only, at any depth the walk reaches; a template is not."""
    (workspace / ".env").write_text("STRIPE=sk_test_secretvalue\n")
    (workspace / "services" / "api").mkdir(parents=True)
    (workspace / "services" / "api" / ".env.local").write_text("DB_PASSWORD=hunter2\n")
    (workspace / "deploy").mkdir()
    (workspace / "deploy" / "id_ed25519").write_text("PRIVATE KEY MATERIAL\n")
    (workspace / ".env.example").write_text("STRIPE=your-key-here\n")
    command = (
        "base64 .env; rev services/api/.env.local; wc -c < deploy/id_ed25519; "
        "cat .env.example; echo more >> .env || echo refused"
    )
    result = await run_tool(BASH, {"command": command}, sandboxed_ctx(workspace, spill_dir))
    text = result.text
    encoded = base64.b64encode(b"STRIPE=sk_test_secretvalue\n").decode()
    for secret in (encoded, "2retnuh", "hunter2", "secretvalue"):
        assert secret not in text, text
    assert "0\n" in text and "your-key-here" in text and "refused" in text, text
    assert (workspace / ".env").read_text() == "STRIPE=sk_test_secretvalue\n"  # untouched
