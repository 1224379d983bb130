"""Confining the commands the agent runs (bash), and keeping the server's memory private.

**The sandbox** (Linux, with bubblewrap) shows a command what the work needs and nothing else:

- the workspace, writable, except the files programs outside the sandbox act on
  (protected_paths.py: `.mcp.json`, `AGENTS.md`, `.vscode`, `.git/hooks`, ... and the
  hooks and config of repositories nested in it), which are read-only, and placeheld when
  missing;
- the system's programs and libraries, read-only: `/usr`, `/bin`, `/sbin`, `/lib*`, `/opt`,
  `/etc` (its secrets emptied: `/etc/shadow`, `/etc/gshadow`, `/etc/sudoers*`, ssh host
  keys, `/etc/ssl/private`, ...), `/sys`, `/nix` and `/snap` where present;
- the home directory as an empty, private, writable tmpfs, with the toolchain directories
  the setting `tools.sandbox.readPaths` lists (`~/.pyenv`, `~/.nvm`, `~/.rustup`,
  `~/.cargo/bin`, ... by default) read-only in it;
- a private `/tmp`, an empty `/run`, `/dev` with the usual devices, a fresh `/proc` in its
  own PID namespace (the server's process, environment and memory are out of sight);
- nothing else: not `/var`, `/mnt`, `/media`, `/srv`, other users' homes, other projects;
  never the sessions directory or the user config and data directories (hidden even when
  they lie inside something shown);
- no network: its own network namespace, so no TCP or UDP, and no abstract Unix sockets;
  filesystem sockets only in the workspace (none of the host's is mounted). With
  `tools.network` the network is the host's, and a seccomp filter refuses to create any
  Unix socket (abstract ones would reach the host's services), as Claude Code's
  sandbox-runtime does;
- as root, no capabilities; when the command ends, everything it started ends.

Codex (`codex-rs/linux-sandbox`) and Claude Code (`sandbox-runtime`) let a sandboxed command
read the whole disk and deny a list; here only an allow-list is mounted, because whatever a
command can read goes to the model's context, and so to the provider, with no network needed.

When: the setting `tools.sandbox` is `auto` (the default: every command is sandboxed, in every
permission mode; one the user approves is not thereby let out, but the question offers
"Allow outside the sandbox", and the model can ask for it, `outsideSandbox`, which is
always asked about), `always` (every command sandboxed, no way out: where there is no sandbox
commands are refused), or `off`. An approval is for running a command; the sandbox is what
the command can reach, and a prefix rule (`npm test:*`) approves words, not what a test
suite's code does. bubblewrap is probed once per process; where it is missing, or cannot
create namespaces (containers without user namespaces), commands under `auto` run
unconfined and the editor is told why. Resource limits (limits.py) apply sandboxed or not.

**Without the sandbox** the command runs as the user, with the server's environment minus
the secrets (environment.py). Its parent is the server, so /proc/$PPID would lead to the
server: `protect_server_process` makes the server non-dumpable, which closes its /proc
files (environ, mem) to other processes of the same user; and a command started by a
server running as root gives up the capabilities that would let it read them anyway
(CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON).

macOS (`sandbox-exec` is deprecated and not used) and Windows: no sandbox; the editor is
told.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import logging
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from agent_server.agent.settings import DEFAULT_READ_PATHS, CommandLimits
from agent_server.agent.tools import limits as command_limits
from agent_server.agent.tools.limits import CommandCgroup, LimitStatus
from agent_server.agent.tools.protected_paths import (
    PLACEHOLDERS,
    empty_directory,
    empty_file,
    git_dirs,
    guarded_below,
    planted_removed,
    protected_mounts,
)
from agent_server.protocol import SandboxMode as SandboxMode

log = logging.getLogger(__name__)

SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_INSPECTION_CAPABILITIES = (19, 21, 38)  # CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON
_SETPRIV_DROP = "-sys_ptrace,-sys_admin,-perfmon"  # the same three, as setpriv names them
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The preamble's own variables (shell_argv), named so that no variable it passes on is one.
_PREAMBLE_NAMES = ("__agent_server_name", "__agent_server_kept")

# The system, read-only (those that exist; a symbolic link such as /bin -> usr/bin is kept
# as a link).
SYSTEM_PATHS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/sys",
    "/nix", "/snap",
)
# What a program jailed alone needs of the system (jail_argv): its programs and libraries,
# not the machine's configuration (/etc), state (/sys) or add-ons (/opt).
JAIL_SYSTEM_PATHS = tuple(path for path in SYSTEM_PATHS if path not in ("/etc", "/sys", "/opt"))
# Secrets in the system paths, hidden (root could read them): files get an empty file,
# directories an empty tmpfs. Globs.
SYSTEM_SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/ssh/ssh_host_*key", "/etc/ssl/private", "/etc/security/opasswd",
    "/etc/krb5.keytab", "/etc/NetworkManager/system-connections", "/etc/wpa_supplicant",
    "/etc/ppp/*-secrets", "/etc/docker/key.json",
)
@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands can be sandboxed on this machine, and if not, why."""

    kind: Literal["bubblewrap", "none"]
    reason: str = ""  # why there is none

    @property
    def available(self) -> bool:
        return self.kind != "none"


@dataclass(frozen=True, slots=True)
class Confinement:
    """How the commands of one session run: sandboxed or not, with network or not, what the
    sandbox hides and shows besides the workspace, and the limits on what they consume.
    `strict` (`tools.sandbox: always`): no command runs outside the sandbox, not even one the
    user lets out, and without a sandbox none runs at all."""

    sandboxed: bool = False
    network: bool = True
    reason: str = ""  # when a sandbox was wanted but is missing: why
    hidden: tuple[Path, ...] = ()  # never shown (the sessions, the user config and data)
    read_paths: tuple[str, ...] = DEFAULT_READ_PATHS  # shown read-only (~ is the home)
    limits: CommandLimits = field(default_factory=CommandLimits)
    strict: bool = False

    @property
    def escapable(self) -> bool:
        """Whether the user may let a command out of the sandbox (a question's option)."""
        return self.sandboxed and not self.strict

    @property
    def refused(self) -> bool:
        """No command may run: the settings require a sandbox this machine cannot give."""
        return self.strict and not self.sandboxed

    def outside(self) -> Confinement:
        """The same, for one command the user let out of the sandbox."""
        return replace(self, sandboxed=False, network=True, reason="") if self.escapable else self

    def describe(self) -> str:
        if self.sandboxed:
            net = "with network" if self.network else "without network"
            return (
                "sandboxed (bubblewrap: the workspace writable but for the files other "
                f"programs act on, the system read-only, the home directory hidden, {net})"
            )
        return "not sandboxed" + (f": {self.reason}" if self.reason else "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sandboxed": self.sandboxed, "network": self.network}
        if self.reason:
            out["reason"] = self.reason
        return out


def private_user_dirs() -> tuple[Path, ...]:
    """agent-server's own directories of the user (config, data, state, cache): never shown
    in the sandbox, wherever they are."""
    import platformdirs

    return tuple(
        Path(directory)
        for directory in {
            platformdirs.user_config_dir("agent-server"),
            platformdirs.user_data_dir("agent-server"),
            platformdirs.user_state_dir("agent-server"),
            platformdirs.user_cache_dir("agent-server"),
        }
    )


def confinement(
    mode: str,
    network: bool,
    *,
    hidden: tuple[Path, ...] = (),
    read_paths: tuple[str, ...] = DEFAULT_READ_PATHS,
    limits: CommandLimits | None = None,
) -> Confinement:
    """The confinement the setting `tools.sandbox` asks for, as far as this machine allows:
    sandboxed unless it is `off`; where no sandbox can be made, `auto` runs commands
    unconfined (with the reason, for the editor) and `always` refuses them."""
    extra: dict[str, Any] = {
        "hidden": hidden, "read_paths": read_paths, "limits": limits or CommandLimits(),
        "strict": mode == "always",
    }
    if mode == "off":
        return Confinement(False, True, **extra)
    status = sandbox_status()
    if not status.available:
        return Confinement(False, True, status.reason, **extra)
    return Confinement(True, network, **extra)


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Probed once per process: bubblewrap present and able to build our sandbox here."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(
            "none", f"no command sandbox on {sys.platform} (bubblewrap is Linux-only)"
        )
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxStatus(
            "none",
            "bubblewrap is not installed (on Debian or Ubuntu: apt install bubblewrap)",
        )
    with tempfile.TemporaryDirectory(prefix="agent-sandbox-probe-") as workspace:
        layout = SandboxLayout(Path(workspace), network=False, placeholders=False)
        argv = bubblewrap_argv(bwrap, layout, ["true"])
        try:
            probe = subprocess.run(
                argv, capture_output=True, timeout=20, check=False, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus("none", f"bubblewrap could not be run: {exc}")
    if probe.returncode != 0:
        detail = probe.stderr.decode("utf-8", errors="replace").strip().splitlines()
        why = detail[0] if detail else f"exit code {probe.returncode}"
        return SandboxStatus(
            "none", f"bubblewrap cannot create a sandbox here ({why[:200]})"
        )
    return SandboxStatus("bubblewrap")


@dataclass(frozen=True, slots=True)
class SandboxLayout:
    """What one sandboxed command sees (see the module docstring)."""

    workspace: Path
    network: bool = False
    hidden: tuple[Path, ...] = ()
    read_paths: tuple[str, ...] = DEFAULT_READ_PATHS
    placeholders: bool = True  # guard protected paths that do not exist yet
    seccomp_fd: int | None = None  # a BPF program for bwrap --seccomp (with network)
    prefix: tuple[str, ...] = ()  # shell lines run before the command, inside
    # Repositories below the root (relative to it), guarded as the root's is: protected_paths.
    nested: tuple[Path, ...] = ()
    # Files that commonly hold secrets (relative to the root): shown empty and read-only.
    secrets: tuple[Path, ...] = ()


def bubblewrap_argv(bwrap: str, layout: SandboxLayout, command: list[str]) -> list[str]:
    """The bwrap command line that runs `command` as `layout` says (a pure function of the
    layout and the file system as it is now; placeholders are listed, not made)."""
    root = layout.workspace
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try"]
    if not layout.network:
        argv.append("--unshare-net")
    argv += _system_mounts(SYSTEM_PATHS)
    for pattern in SYSTEM_SECRETS:
        for found in sorted(glob.glob(pattern)):
            argv += _hide(Path(found))
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    if layout.network:
        for resolver in (Path("/run/systemd/resolve"), Path("/run/resolvconf")):
            if resolver.is_dir():  # /etc/resolv.conf often points in here
                argv += ["--ro-bind", str(resolver), str(resolver)]
    home = _home()
    if home is not None and not home.is_relative_to(Path("/tmp")):
        argv += ["--tmpfs", str(home)]
    for entry in layout.read_paths:
        path = Path(entry).expanduser()
        if path.is_absolute() and path.exists() and not _covers(path, root):
            argv += ["--ro-bind", str(path), str(path)]
    for git_dir in git_dirs(root):
        argv += ["--ro-bind", str(git_dir), str(git_dir)]
    argv += ["--bind", str(root), str(root)]
    for repository in (root, *(root / relative for relative in layout.nested)):
        argv += _pinned_dot_git(repository)
    existing, missing = protected_mounts(root, layout.nested)
    for path in existing:
        argv += ["--ro-bind", str(path), str(path)]
    if layout.placeholders:
        for path in missing:
            argv += ["--ro-bind", str(empty_directory()), str(path)]
    for secret in layout.secrets:  # no reading them, under any encoding (`base64 .env`)
        reached = root / secret
        if reached.is_file() and not reached.is_symlink():
            argv += ["--ro-bind", str(empty_file()), str(reached)]
    for private in layout.hidden:
        if private.is_dir() and _shown(private, root, home, layout.read_paths):
            argv += ["--tmpfs", str(private)]
    argv += ["--chdir", str(root)]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
    if layout.seccomp_fd is not None:
        argv += ["--seccomp", str(layout.seccomp_fd)]
    if layout.prefix and command[:2] == ["bash", "-c"]:
        script = "; ".join((*layout.prefix, 'exec bash -c "$0"'))
        command = ["bash", "-c", script, *command[2:]]
    return [*argv, "--", *command]


def jail_argv(bwrap: str, directory_fd: int, directory: Path, cwd: Path, command: list[str]) -> (
    list[str]
):
    """A bwrap command line that runs `command` in a jail where nothing exists but the
    system's programs and libraries (JAIL_SYSTEM_PATHS) and, read-only, the directory open as
    `directory_fd`, mounted at its own path `directory` from the descriptor (no name is
    looked up again); no network, no other process, no environment, no capability. Whatever
    link the program meets in the directory, swapped in meanwhile or not, leads at most to
    the system's programs. The program is shown too where it lies outside them (a ripgrep in
    ~/.cargo/bin). `cwd`: the working directory (the directory or one above it)."""
    argv = [bwrap, "--die-with-parent", "--unshare-all", "--new-session", "--clearenv"]
    argv += _system_mounts(JAIL_SYSTEM_PATHS)
    program = os.path.realpath(shutil.which(command[0]) or command[0])
    if not any(Path(program).is_relative_to(system) for system in JAIL_SYSTEM_PATHS):
        argv += ["--ro-bind", program, program]
    argv += ["--ro-bind-fd", str(directory_fd), str(directory), "--chdir", str(cwd)]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
    return [*argv, "--", program, *command[1:]]


def _system_mounts(paths: tuple[str, ...]) -> list[str]:
    """The bwrap arguments that show `paths` read-only (those that exist; a symbolic link such
    as /bin -> usr/bin is kept as a link)."""
    argv: list[str] = []
    for system in paths:
        path = Path(system)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), system]
        elif path.exists():
            argv += ["--ro-bind", system, system]
    return argv


def _pinned_dot_git(root: Path) -> list[str]:
    """`.git` mounted over itself, so that a sandboxed command cannot rename it away (a mount
    point cannot be moved) and put in its place a `.git` file whose `gitdir:` the next
    sandbox would mount (protected_paths.git_dirs), or a copy with hooks of its own: a
    directory stays writable (git commits in the sandbox), a worktree's `.git` file is
    read-only. A link is left alone: protected_mounts guards what it leads to."""
    dot_git = root / ".git"
    if dot_git.is_symlink():
        return []
    if dot_git.is_dir():
        return ["--bind", str(dot_git), str(dot_git)]
    if dot_git.is_file():
        return ["--ro-bind", str(dot_git), str(dot_git)]
    return []


def _hide(path: Path) -> list[str]:
    if path.is_dir():
        return ["--tmpfs", str(path)]
    return ["--ro-bind", str(empty_file()), str(path)]


def _home() -> Path | None:
    value = os.environ.get("HOME")
    if not value:
        return None
    home = Path(value)
    return home if home.is_absolute() and str(home) != "/" else None


def _covers(path: Path, workspace: Path) -> bool:
    """Whether mounting `path` would hide the workspace or be inside it."""
    return workspace.is_relative_to(path) or path.is_relative_to(workspace)


def _shown(private: Path, workspace: Path, home: Path | None, read_paths: tuple[str, ...]) -> (
    bool
):
    """Whether the sandbox would show `private` (inside the workspace, a system path or a
    read path): then it gets an empty tmpfs over it."""
    shown = [workspace, *(Path(p) for p in SYSTEM_PATHS)]
    shown += [Path(p).expanduser() for p in read_paths]
    return any(private.is_relative_to(place) for place in shown if place.is_absolute())


# --- launching a command ------------------------------------------------------------------


@dataclass
class Launch:
    """How to start one command: the argv, what the child runs before exec, the descriptors
    it keeps; `close` after it ended (the cgroup, the placeholders, the seccomp program)."""

    argv: list[str]
    before_exec: Callable[[], None] | None = None
    pass_fds: tuple[int, ...] = ()
    limits: CommandLimits = field(default_factory=CommandLimits)
    status: LimitStatus | None = None
    group: CommandCgroup | None = None
    drops_capabilities: bool = False  # before_exec gives up the inspection capabilities
    # argv starts the sandbox (bwrap), whose first process stays outside it and runs the
    # command as its descendant: a signal meant for the command is not for it.
    wrapped: bool = False
    _exit: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def shell_argv(self, env_names: Collection[str]) -> list[str] | None:
        """The whole launch as one command line for another process to start (an ACP
        editor's terminal), which adds an environment of its own and passes no descriptors:
        bash does what `before_exec` does (the cgroup, the rlimits, setpriv for the
        capabilities), reads no input, merges stderr into stdout, and execs `argv` through
        `env -i` with only the variables `env_names` names (the caller gives their values,
        scrubbed; names that are not shell names are left out). None where that cannot be
        said in a command line: a descriptor to pass (the seccomp filter), no setpriv."""
        bash, env = shutil.which("bash"), shutil.which("env")
        setpriv = _setpriv() if self.drops_capabilities else None
        if self.pass_fds or bash is None or env is None or (
            self.drops_capabilities and setpriv is None
        ):
            return None
        passed = sorted(
            name for name in env_names
            if _SHELL_NAME.fullmatch(name) and name not in _PREAMBLE_NAMES
        )
        if left_out := sorted(set(env_names) - set(passed)):
            log.info("not passed to a command in the editor's terminal: %s", ", ".join(left_out))
        name, kept = _PREAMBLE_NAMES
        script = [
            f"{kept}=()",
            f"for {name} in {' '.join(passed)}; do "
            f'[[ -v ${name} ]] && {kept}+=("${name}=${{!{name}}}"); done',
        ]
        if self.status is not None:
            script += command_limits.before_exec_lines(self.limits, self.status, self.group)
        script += ["exec </dev/null 2>&1", f'exec {env} -i "${{{kept}[@]}}" "$@"']
        drop = [setpriv, "--bounding-set", _SETPRIV_DROP] if setpriv is not None else []
        return [bash, "-c", "\n".join(script), "agent-server-command", *drop, *self.argv]

    def kill_remaining(self) -> None:
        """Kill what is left of the command in its cgroup (nothing without one)."""
        if self.group is not None:
            self.group.kill()

    def limit_notes(self) -> list[str]:
        """The limits the command ran into, for the model."""
        return self.group.hits(self.limits) if self.group is not None else []

    async def aclose(self) -> None:
        self._exit.close()
        await command_limits.release(self.group)

    def close(self) -> None:
        """Without waiting: the cgroup is removed later if its processes are still exiting."""
        self._exit.close()
        command_limits.release_later(self.group)


@functools.cache
def _setpriv() -> str | None:
    """setpriv, if it can drop the inspection capabilities here (an older one does not know
    `perfmon`, and refuses the whole list)."""
    setpriv, true = shutil.which("setpriv"), shutil.which("true")
    if setpriv is None or true is None:
        return None
    try:
        probe = subprocess.run(
            [setpriv, "--bounding-set", _SETPRIV_DROP, true], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return setpriv if probe.returncode == 0 else None


def confine(command: list[str], workspace: Path, confined: Confinement) -> Launch:
    """How to start `command` in `workspace` as `confined` says (sandbox and limits)."""
    limits = confined.limits
    group = command_limits.command_cgroup(limits)
    launch = Launch(command, limits=limits, group=group)
    try:
        bwrap = shutil.which("bwrap") if confined.sandboxed else None
        status = command_limits.enforcement(limits, sandboxed=bwrap is not None, group=group)
        launch.status = status
        set_limits = command_limits.before_exec(limits, status, group)
        if bwrap is not None:
            seccomp = (
                launch._exit.enter_context(_unix_socket_filter()) if confined.network else None
            )
            nested, secrets = guarded_below(workspace)  # one walk finds both
            layout = SandboxLayout(
                workspace,
                network=confined.network,
                hidden=confined.hidden,
                read_paths=confined.read_paths,
                seccomp_fd=seccomp,
                prefix=tuple(command_limits.in_sandbox_prefix(limits, status)),
                nested=tuple(nested),
                secrets=tuple(secrets),
            )
            launch.argv = bubblewrap_argv(bwrap, layout, command)
            launch.wrapped = True
            launch.pass_fds = (seccomp,) if seccomp is not None else ()
            placeholders = protected_mounts(workspace, nested)[1]
            launch._exit.enter_context(PLACEHOLDERS.held(placeholders))
            launch._exit.enter_context(planted_removed(workspace, nested))
            launch.before_exec = set_limits
        elif sys.platform.startswith("linux") and os.geteuid() == 0:
            launch.before_exec = _then(set_limits, _drop_inspection_capabilities)
            launch.drops_capabilities = True
        else:
            launch.before_exec = set_limits
    except BaseException:
        launch.close()
        raise
    return launch


def _then(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        first()
        second()

    return run


# --- the seccomp filter: no Unix sockets (with network) -----------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SOCKET_SYSCALL = {"x86_64": 41, "aarch64": 198}
_X32_BIT = 0x40000000
_AF_UNIX = 1
_EAFNOSUPPORT = 97
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000


def unix_socket_filter_program(machine: str | None = None) -> bytes | None:
    """A classic BPF program (bwrap --seccomp) that fails socket(AF_UNIX, ...) with
    EAFNOSUPPORT and allows every other call, for this machine's architecture (None where it
    is not known: then no filter). Like sandbox-runtime's, it does not cover the 32-bit
    socketcall(2) of i386 programs on x86_64."""
    machine = machine or platform.machine()
    arch, socket_nr = _AUDIT_ARCH.get(machine), _SOCKET_SYSCALL.get(machine)
    if arch is None or socket_nr is None:
        return None
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    x32 = socket_nr | _X32_BIT if machine == "x86_64" else socket_nr
    program = [
        op(ld, 4),  # the architecture
        op(jeq, arch, 0, 6),  # not ours: allow
        op(ld, 0),  # the system call
        op(jeq, socket_nr, 1, 0),
        op(jeq, x32, 0, 3),  # not socket(): allow
        op(ld, 16),  # its first argument (low 32 bits): the domain
        op(jeq, _AF_UNIX, 0, 1),
        op(ret, _SECCOMP_RET_ERRNO | _EAFNOSUPPORT),
        op(ret, _SECCOMP_RET_ALLOW),
    ]
    return b"".join(program)


@contextlib.contextmanager
def _unix_socket_filter() -> Iterator[int | None]:
    """A descriptor bwrap reads the filter from (None when there is no filter here)."""
    program = unix_socket_filter_program()
    if program is None:
        yield None
        return
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)
    finally:
        os.close(write_end)
    try:
        yield read_end
    finally:
        os.close(read_end)


def protect_server_process() -> bool:
    """Make this process non-dumpable (Linux): its /proc files (environ, mem) are then
    closed to other processes of the same user, such as the commands it runs. No core
    dumps either, which is right for a process holding API keys. Idempotent."""
    prctl = _prctl()
    if prctl is None:
        return False
    if prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("could not make the server non-dumpable (errno %d)", ctypes.get_errno())
        return False
    return True


def _drop_inspection_capabilities() -> None:
    """In the child, before exec: give up the capabilities root would need to read the
    server's /proc files (runs between fork and exec: no Python-level locks, no logging)."""
    prctl = _PRCTL
    if prctl is None:
        return
    for capability in _INSPECTION_CAPABILITIES:
        prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    return None


_PRCTL = _prctl()  # resolved before any fork
