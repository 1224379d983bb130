"""What one command may consume: processes, memory, file size, CPU time (and, in bash.py, wall
time). From the `tools.limits` settings; applied sandboxed or not, as far as the OS allows.

How each is enforced, best first:

- **Processes and memory: a cgroup per command** (Linux, where the server may create one: as
  root, or with a delegated cgroup v2 subtree). The command and everything it starts join it
  before bash runs; `pids.max` refuses the fork that would pass the limit (a fork bomb ends
  with "Resource temporarily unavailable", not with the machine), and the memory limit
  counts all of the command's processes together (past it the kernel kills the command).
  The cgroup is removed when the command ends. This is the one bound that holds for root:
  RLIMIT_NPROC is per real user and the kernel never enforces it for root.
- **RLIMIT_NPROC** where there is no such cgroup and the server is not root: in the sandbox,
  set inside the command's own user namespace (bubblewrap makes one when run unprivileged),
  where it counts the command's processes alone; unsandboxed, it counts all of the user's
  processes, so the limit is the user's processes now plus the setting.
- **RLIMIT_AS** (address space, per process) for memory where there is no memory cgroup.
- **RLIMIT_FSIZE** (the largest file a process may write; past it the write fails with "File
  too large") and **RLIMIT_CPU** (CPU seconds per process), always.

A bash result says which limit a command hit (`CommandCgroup.hits`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import logging
import os
import resource
import shlex
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent_server.agent.settings import CommandLimits

log = logging.getLogger(__name__)

MB = 1024 * 1024
_NAMES = itertools.count(1)


def memory_limit(limits: CommandLimits) -> int:
    """The memory limit in bytes (0: none); `memoryMB` unset: half the machine's memory."""
    if limits.memory_mb is None:
        return _physical_memory() // 2
    return limits.memory_mb * MB


@functools.cache
def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024 * MB


# --- cgroups ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CgroupRoots:
    """Where this process may create a cgroup with each controller (None: nowhere)."""

    pids: Path | None = None
    memory: Path | None = None
    version: int = 1


@functools.cache
def cgroup_roots() -> CgroupRoots:
    """Probed once: the cgroups of this process that take a child with a pids and a memory
    limit (cgroup v1 hierarchies, or a v2 subtree with the controllers delegated)."""
    if not sys.platform.startswith("linux"):
        return CgroupRoots()
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return CgroupRoots()
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            v2 = Path(fields[4])
        elif tail[0] == "cgroup":
            for controller in tail[2].split(","):
                if controller in ("pids", "memory"):
                    v1[controller] = Path(fields[4])
    paths: dict[str, str] = {}
    for line in own:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else ("",):
            paths[controller] = path
    pids = _usable(v1["pids"] / paths["pids"].lstrip("/"), "pids.max") if (
        "pids" in v1 and "pids" in paths
    ) else None
    memory = _usable(v1["memory"] / paths["memory"].lstrip("/"), "memory.limit_in_bytes") if (
        "memory" in v1 and "memory" in paths
    ) else None
    if pids is not None or memory is not None:
        return CgroupRoots(pids, memory, 1)
    if v2 is not None and "" in paths:
        base = v2 / paths[""].lstrip("/")
        return CgroupRoots(
            _usable(base, "pids.max"), _usable(base, "memory.max"), 2
        )
    return CgroupRoots()


def _usable(parent: Path, control: str) -> Path | None:
    """`parent`, when a child made in it has `control` and takes a value."""
    _sweep(parent)
    probe = parent / f"agent-server-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return None
    try:
        (probe / control).write_text("max\n" if control != "memory.limit_in_bytes" else "-1\n")
        return parent
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@dataclass
class CommandCgroup:
    """The cgroup(s) of one command: `join` runs in the child before exec."""

    dirs: list[Path] = field(default_factory=list)
    procs_files: list[str] = field(default_factory=list)

    def join(self) -> None:
        for procs in self.procs_files:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0\n")
            finally:
                os.close(fd)

    def hits(self, limits: CommandLimits) -> list[str]:
        """What the command ran into, in words for the model."""
        notes: list[str] = []
        for directory in self.dirs:
            events = _read_events(directory / "pids.events")
            if events.get("max", 0):
                notes.append(
                    f"The command reached the limit of {limits.processes} processes (the "
                    "tools.limits.processes setting): starting more failed "
                    f"{events['max']} time(s) with 'Resource temporarily unavailable'."
                )
            oom = _read_events(directory / "memory.events").get("oom_kill", 0) or _read_events(
                directory / "memory.oom_control"
            ).get("oom_kill", 0)
            if oom:
                notes.append(
                    f"The command ran out of memory: it may use {memory_limit(limits) // MB} MB "
                    "(the tools.limits.memoryMB setting), and the kernel killed "
                    f"{oom} of its processes."
                )
        return notes

    def kill(self) -> None:
        """SIGKILL every process still in the cgroups: what a kill of the command's first
        process left running (an editor's terminal kills only that one: a background job,
        or a sandbox whose inner process was not yet bound to die with it)."""
        for _ in range(3):  # a process forking while it is killed: its child, next pass
            pids = {pid for procs in self.procs_files for pid in _pids(procs)}
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the cgroups; False while processes remain (a background job)."""
        done = True
        for directory in self.dirs:
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done


def _pids(procs: str) -> list[int]:
    try:
        with open(procs, encoding="ascii") as listed:
            return [int(line) for line in listed if line.strip()]
    except (OSError, ValueError):
        return []


_LEFT_OVER: list[CommandCgroup] = []  # cgroups whose background jobs outlived the command


def command_cgroup(limits: CommandLimits) -> CommandCgroup | None:
    """A fresh cgroup for one command with its process and memory limits, or None where
    cgroups cannot be made here (the rlimits apply then)."""
    _LEFT_OVER[:] = [group for group in _LEFT_OVER if not group.remove()]
    roots = cgroup_roots()
    wanted: dict[Path, dict[str, str]] = {}
    if roots.pids is not None and limits.processes:
        wanted.setdefault(roots.pids, {})["pids.max"] = str(limits.processes)
    memory = memory_limit(limits)
    if roots.memory is not None and memory:
        control = "memory.max" if roots.version == 2 else "memory.limit_in_bytes"
        wanted.setdefault(roots.memory, {})[control] = str(memory)
    if not wanted:
        return None
    name = f"agent-server-{os.getpid()}-{next(_NAMES)}"
    group = CommandCgroup()
    try:
        for parent, controls in wanted.items():
            directory = parent / name
            directory.mkdir()
            group.dirs.append(directory)
            group.procs_files.append(str(directory / "cgroup.procs"))
            for control, value in controls.items():
                (directory / control).write_text(value + "\n")
    except OSError as error:
        log.warning("could not make a cgroup for the command (%s); rlimits only", error)
        group.remove()
        return None
    return group


async def release(group: CommandCgroup | None, seconds: float = 2.0) -> None:
    """Remove a command's cgroup once its processes are gone (they take a moment to exit
    after the command); one still in use (an unsandboxed background job) is removed later,
    at the next command or when the server exits."""
    if group is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not group.remove():
        if loop.time() >= deadline:
            _LEFT_OVER.append(group)
            return
        await asyncio.sleep(0.02)


def release_later(group: CommandCgroup | None) -> None:
    """Remove the cgroup now if it is empty, else at the next command or at exit."""
    if group is not None and not group.remove():
        _LEFT_OVER.append(group)


@atexit.register
def _remove_left_over() -> None:
    for group in _LEFT_OVER:
        group.remove()


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups servers that are gone left behind (killed mid-command)."""
    with contextlib.suppress(OSError):
        for child in parent.glob("agent-server-*-*"):
            pid = child.name.split("-")[2]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                with contextlib.suppress(OSError):
                    child.rmdir()
            except PermissionError:
                continue


def _read_events(path: Path) -> dict[str, int]:
    try:
        text = path.read_text()
    except OSError:
        return {}
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


# --- rlimits ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LimitStatus:
    """How the limits are enforced for one command."""

    processes: str  # "cgroup", "rlimit", "rlimit-in-sandbox", or "none"
    memory: str  # "cgroup", "rlimit", or "none"


def enforcement(limits: CommandLimits, *, sandboxed: bool, group: CommandCgroup | None) -> (
    LimitStatus
):
    roots = cgroup_roots()
    in_group = group is not None
    if not limits.processes:
        processes = "none"
    elif in_group and roots.pids is not None:
        processes = "cgroup"
    elif os.geteuid() == 0:
        processes = "none"  # RLIMIT_NPROC does not bind root
    else:
        processes = "rlimit-in-sandbox" if sandboxed else "rlimit"
    if not memory_limit(limits):
        memory = "none"
    elif in_group and roots.memory is not None:
        memory = "cgroup"
    else:
        memory = "rlimit"
    return LimitStatus(processes, memory)


def before_exec(
    limits: CommandLimits, status: LimitStatus, group: CommandCgroup | None
) -> Callable[[], None]:
    """What the child runs between fork and exec: join the cgroup, set the rlimits. (No
    Python-level locks there: the values are computed here, in the parent.)"""
    settings = _rlimits(limits, status)

    def run() -> None:
        if group is not None:
            group.join()
        for which, value in settings:
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))

    return run


def _rlimits(limits: CommandLimits, status: LimitStatus) -> list[tuple[int, int]]:
    settings: list[tuple[int, int]] = []
    if limits.file_size_mb:
        settings.append((resource.RLIMIT_FSIZE, limits.file_size_mb * MB))
    if limits.cpu_seconds:
        settings.append((resource.RLIMIT_CPU, limits.cpu_seconds))
    if status.memory == "rlimit":
        settings.append((resource.RLIMIT_AS, memory_limit(limits)))
    if status.processes == "rlimit":
        settings.append((resource.RLIMIT_NPROC, _user_processes() + limits.processes))
    return settings


# bash's ulimit flag for each rlimit, and its unit in bytes (1: a count or seconds).
_ULIMIT_FLAGS = {
    resource.RLIMIT_FSIZE: ("-f", 1024),
    resource.RLIMIT_CPU: ("-t", 1),
    resource.RLIMIT_AS: ("-v", 1024),
    resource.RLIMIT_NPROC: ("-u", 1),
}


def before_exec_lines(
    limits: CommandLimits, status: LimitStatus, group: CommandCgroup | None
) -> list[str]:
    """`before_exec` as bash lines, for a command another process starts (an ACP editor's
    terminal): join the cgroup, set the rlimits (a hard limit already lower is kept, as
    `before_exec` keeps it). A line that fails ends the command with 126 before it runs."""
    lines = [f"echo $$ > {shlex.quote(procs)} || exit 126" for procs in
             (group.procs_files if group is not None else [])]
    for which, value in _rlimits(limits, status):
        flag, unit = _ULIMIT_FLAGS[which]
        amount = -(-value // unit)
        lines.append(
            f"ulimit {flag} {amount} 2>/dev/null || ulimit {flag} \"$(ulimit -H {flag})\" "
            "|| exit 126"
        )
    return lines


def in_sandbox_prefix(limits: CommandLimits, status: LimitStatus) -> list[str]:
    """Run first inside the sandbox: RLIMIT_NPROC set there, in the command's own user
    namespace, counts the command's processes alone."""
    if status.processes != "rlimit-in-sandbox":
        return []
    return [f"ulimit -u {limits.processes} || exit 126"]


def _user_processes() -> int:
    """How many processes this user runs now (RLIMIT_NPROC counts them all)."""
    uid = os.getuid()
    count = 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        count += 1
    return count
