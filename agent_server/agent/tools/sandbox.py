"""Confining the commands the agent runs (bash), and keeping the server's memory private.

**The sandbox** (Linux, with bubblewrap): the command sees the whole file system read-only
except the workspace (writable) and a private, empty /tmp; /run (sockets of Docker, D-Bus,
ssh-agent) is hidden; it runs in its own PID namespace with a fresh /proc, so the server's
process, its environment and its memory are out of sight; it has no network unless the
setting `tools.network` allows it; as root, it keeps no capabilities. When the command ends,
everything it started ends with it (the PID namespace goes away). bubblewrap is probed once
per process; where it is missing, or cannot create namespaces (containers without user
namespaces), commands run unconfined and the editor is told why.

When: the setting `tools.sandbox` is `auto` (the default: sandboxed when `permissions.mode`
is `allowAll`, where nobody approves each command), `always`, or `off`.

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
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from agent_server.protocol import SandboxMode as SandboxMode

log = logging.getLogger(__name__)

SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_INSPECTION_CAPABILITIES = (19, 21, 38)  # CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON


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
    """How the commands of one session run: sandboxed or not, with network or not."""

    sandboxed: bool = False
    network: bool = True
    reason: str = ""  # when a sandbox was wanted but is missing: why

    def describe(self) -> str:
        if self.sandboxed:
            net = "with network" if self.network else "without network"
            return f"sandboxed (bubblewrap: workspace writable, the rest read-only, {net})"
        return "not sandboxed" + (f": {self.reason}" if self.reason else "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sandboxed": self.sandboxed, "network": self.network}
        if self.reason:
            out["reason"] = self.reason
        return out


def wants_sandbox(mode: str, permissions_mode: str) -> bool:
    return mode == "always" or (mode == "auto" and permissions_mode == "allowAll")


def confinement(mode: str, permissions_mode: str, network: bool) -> Confinement:
    """The confinement the settings ask for, as far as this machine allows."""
    if not wants_sandbox(mode, permissions_mode):
        return Confinement(False, True)
    status = sandbox_status()
    if not status.available:
        return Confinement(False, True, status.reason)
    return Confinement(True, network)


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
        argv = bubblewrap_argv(bwrap, Path(workspace), ["true"], network=False)
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


def bubblewrap_argv(bwrap: str, workspace: Path, command: list[str], *, network: bool) -> list[str]:
    """The bwrap command line that runs `command` confined to `workspace`."""
    argv = [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
    ]
    if Path("/run").is_dir():
        argv += ["--tmpfs", "/run"]
        resolver = Path("/run/systemd/resolve")
        if network and resolver.is_dir():  # /etc/resolv.conf often points in here
            argv += ["--ro-bind", str(resolver), str(resolver)]
    root = str(workspace)
    argv += [
        "--bind", root, root,
        "--chdir", root,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
    ]
    if not network:
        argv.append("--unshare-net")
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
    return [*argv, "--", *command]


def confine(
    command: list[str], workspace: Path, confined: Confinement
) -> tuple[list[str], Callable[[], None] | None]:
    """The argv to start and the function to run in the child before exec (or None)."""
    if confined.sandboxed:
        bwrap = shutil.which("bwrap")
        if bwrap is not None:
            return bubblewrap_argv(bwrap, workspace, command, network=confined.network), None
    if sys.platform.startswith("linux") and os.geteuid() == 0:
        return command, _drop_inspection_capabilities
    return command, None


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
