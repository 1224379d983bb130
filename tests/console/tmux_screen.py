"""A terminal program as a person sees it: run in tmux (a private server), keys sent with
send-keys, the screen read with capture-pane, at a fixed size (80 columns by default).

No test sends a key before the program is ready for it unless that is what it tests: `ready`
waits for the empty prompt line with the cursor on it (readline reading), `typed_ahead` for
keys to be in the terminal's buffer. Every wait is bounded (`WAIT`) and says what it waited
for; `close` returns once the program has ended (its session closed, its lock let go)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import signal
import struct
import subprocess
import sys
import termios
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

# How long a wait may take. The slowest thing waited for is a chat's start on a busy machine
# (the agent and the SDKs imported: seconds of CPU); a minute is ten times that.
WAIT = 60.0
PROMPT = "you ›"


class TmuxScreen:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        width: int = 80,
        height: int = 40,
        under_shell: bool = False,
    ) -> None:
        self.socket = f"agent-server-test-{uuid.uuid4().hex[:8]}"
        self._pid: int | None = None
        self._pane_pid: int | None = None
        self._under_shell = under_shell
        program = " ".join(
            ["env", "-i"]
            + [shlex.quote(f"{k}={v}") for k, v in env.items()]
            + [shlex.quote(a) for a in argv]
        )
        if under_shell:  # for `held`: tmux sends SIGCONT to its own stopped children
            # The shell takes Ctrl-C's SIGINT as its program does (a trap: the program starts
            # with SIGINT's default), waits for it and exits with its status.
            program = "sh -c " + shlex.quote(f"trap : INT; {program}; exit $?")
        command = f"cd {shlex.quote(str(cwd))} && exec {program}"
        # The program is the pane's process (exec): if it ends, the pane stays, with what it
        # printed last, so a test that waits for more shows why instead of a missing server.
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
                   command, ";", "set-window-option", "-t", "t", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        run = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True, text=True, check=True,
        )
        return run.stdout

    def _reap(self) -> None:
        """Has tmux reap the program if it has ended unnoticed. Debian's tmux is built with
        libutempter, which puts in its own SIGCHLD handler while it removes the pane's utmp
        record as the pane's terminal closes: a program that exits in that moment is left a
        zombie and the pane never dies (tmux/tmux#311, #4559; seen here under load, after
        /quit). tmux's answer is a SIGCHLD sent to the server, which then reaps it."""
        pid = self.pane_pid()
        try:
            state, parent = (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2])
        except OSError:
            return
        if state == "Z":
            os.kill(int(parent), signal.SIGCHLD)

    def keys(self, *keys: str, literal: bool = False) -> None:
        self._tmux("send-keys", "-t", "t", *(["-l"] if literal else []), *keys)

    def type(self, text: str) -> None:
        self.keys(text, literal=True)

    def paste(self, text: str) -> None:
        """Pastes `text` as a terminal does: wrapped in bracketed-paste marks only if the
        program asked for them (else its newlines arrive as Enter keys)."""
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "load-buffer", "-"],
            input=text, text=True, check=True,
        )
        self._tmux("paste-buffer", "-p", "-d", "-t", "t")

    def screen(self) -> str:
        """The visible screen and its scrollback, lines as the terminal wrapped them."""
        return self._tmux("capture-pane", "-p", "-t", "t", "-S", "-2000")

    def visible(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def wait_for(self, text: str, timeout: float = WAIT, *, count: int = 1) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the screen:\n{screen}")
            self._reap()  # "Pane is dead" shows once tmux has reaped the program
            time.sleep(0.2)

    def ready(self, typed: str = "", timeout: float = WAIT, *, prompt: str = PROMPT + " ") -> str:
        """Waits until the program reads a line at its prompt (`you › `, or `prompt`) holding
        `typed`, the cursor at its end, and waits for a key (`reads_keys`). Returns the
        screen."""
        want = f"{prompt}{typed}"
        deadline = time.monotonic() + timeout
        while True:
            x, y = (int(n) for n in self._tmux(
                "display-message", "-p", "-t", "t", "#{cursor_x} #{cursor_y}").split())
            lines = self.visible().split("\n")
            line = lines[y] if y < len(lines) else ""
            if line.rstrip() == want.rstrip() and x == len(want) and reads_keys(self.pid()):
                return self.screen()
            if time.monotonic() > deadline:
                raise AssertionError(f"never ready at {want!r}; the screen:\n{self.screen()}")
            self._reap()
            time.sleep(0.1)

    def prompt(self, text: str) -> None:
        """Types `text` and Enter at the prompt, once the chat reads it (`ready`)."""
        self.ready()
        self.type(text)
        self.keys("Enter")

    def wait_for_end(self, text: str, timeout: float = WAIT) -> str:
        """Waits until the visible screen ends with `text` (a prompt drawn whole, over lines);
        returns it."""
        deadline = time.monotonic() + timeout
        while not (visible := self.visible().rstrip()).endswith(text):
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never ended with {text!r}:\n{visible}")
            self._reap()
            time.sleep(0.1)
        return visible

    def typed_ahead(self, count: int, timeout: float = WAIT) -> None:
        """Waits until `count` bytes sent are in the terminal's input buffer, unread (keys
        typed while the program does not read)."""
        tty = self._tmux("display-message", "-p", "-t", "t", "#{pane_tty}").strip()
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            deadline = time.monotonic() + timeout
            while True:
                waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
                if waiting >= count:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{waiting} of {count} bytes typed ahead; the screen:\n{self.screen()}"
                    )
                time.sleep(0.05)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The program stopped (SIGSTOP) while entered, and let go on (SIGCONT) after: what
        is sent meanwhile is taken in the order it came once it goes on. Needs a screen made
        `under_shell` (tmux would let its own child go on at once)."""
        assert self._under_shell, "held() needs TmuxScreen(..., under_shell=True)"
        pid = self.pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + WAIT
            while _state(pid) not in ("T", "t", "", "Z"):
                if time.monotonic() > deadline:
                    raise AssertionError(f"the program (pid {pid}) never stopped")
                time.sleep(0.01)
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def signal_pending(self, number: int, timeout: float = WAIT) -> None:
        """Waits until signal `number` waits for the (held) program: a key the terminal
        turns into a signal (Ctrl-C) has been taken."""
        bit = 1 << (number - 1)
        deadline = time.monotonic() + timeout
        while True:
            status = Path(f"/proc/{self.pid()}/status").read_text()
            pending = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            if (int(pending["ShdPnd"], 16) | int(pending["SigPnd"], 16)) & bit:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"signal {number} never came; the screen:\n{self.screen()}")
            time.sleep(0.01)

    def resize(self, width: int) -> None:
        """The terminal made `width` columns wide (as a person drags its window's edge)."""
        self._tmux("resize-window", "-t", "t", "-x", str(width))

    def status(self) -> str:
        """The program's exit status once it has ended (the pane stays: remain-on-exit);
        empty while it runs."""
        self._reap()
        return self._tmux("display-message", "-p", "-t", "t", "#{pane_dead_status}").strip()

    def pane_pid(self) -> int:
        """The pane's process: the program, or the shell it runs under."""
        if self._pane_pid is None:
            self._pane_pid = int(
                self._tmux("display-message", "-p", "-t", "t", "#{pane_pid}").strip()
            )
        return self._pane_pid

    def pid(self) -> int:
        """The program's process id: the pane's process (it is exec'd), or, `under_shell`,
        that shell's child."""
        if self._pid is None:
            pane = self._pid = self.pane_pid()
            deadline = time.monotonic() + WAIT
            while self._under_shell and self._pid == pane:
                children = Path(f"/proc/{pane}/task/{pane}/children").read_text().split()
                if children:
                    self._pid = int(children[0])
                elif time.monotonic() > deadline:
                    raise AssertionError("the shell never started the program")
                else:
                    time.sleep(0.01)
        return self._pid

    def close(self, timeout: float = WAIT) -> None:
        """Closes the terminal (the program gets SIGHUP, as from a closed window) and waits
        for the program to end: its sessions closed and their locks let go, so the next
        program a test starts on them does not find them open."""
        try:
            pid = self.pid()
        except subprocess.CalledProcessError:
            pid = None  # the server is gone already
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        deadline = time.monotonic() + timeout
        while pid is not None and _running(pid):
            if time.monotonic() > deadline:
                raise AssertionError(f"the program (pid {pid}) did not end after its terminal closed")
            time.sleep(0.05)


def reads_keys(pid: int) -> bool:
    """Whether the program's main thread waits for a key: blocked in select or poll (what
    readline waits in), not busy, not in a lock or a sleep. A signal (Ctrl-C) sent now is
    taken at once; one sent a moment before readline waits may be taken only with the next
    key (CPython's readline checks for signals when select is interrupted)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()[0]
    except (OSError, IndexError):
        return False
    return "poll" in wchan or "select" in wchan or syscall in _WAITING_SYSCALLS


# select, poll and their kin on x86_64 (poll 7, select 23, pselect6 270, ppoll 271) and
# aarch64 (pselect6 72, ppoll 73).
_WAITING_SYSCALLS = frozenset(("7", "23", "270", "271", "72", "73"))


def process_report(pid: int) -> str:
    """What each thread of `pid` is doing, and its signal masks: for a test that waited in
    vain to say why (a signal blocked, ignored or pending; a thread holding on)."""
    lines = []
    try:
        tasks = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
    except OSError:
        return f"pid {pid}: gone"
    for task in tasks:
        base = f"/proc/{pid}/task/{task}"
        try:
            status = dict(
                line.split(":\t", 1)
                for line in Path(f"{base}/status").read_text().splitlines() if ":\t" in line
            )
            wchan = Path(f"{base}/wchan").read_text()
        except OSError:
            continue
        masks = " ".join(f"{k}={status.get(k, '?')}" for k in
                         ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))
        lines.append(f"thread {task} {status.get('Name', '?')} {status.get('State', '?')} "
                     f"wchan={wchan} {masks}")
    return "\n".join(lines)


def wait_reading_keys(pid: int, timeout: float = WAIT) -> None:
    """Waits until the program waits for a key (`reads_keys`)."""
    deadline = time.monotonic() + timeout
    while not reads_keys(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"the program (pid {pid}) never waited for a key")
        time.sleep(0.02)


def _state(pid: int) -> str:
    """The process's state letter (R, S, T, Z, ...); "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _running(pid: int) -> bool:
    """Whether `pid` runs (not ended; a zombie has ended, whoever reaps it)."""
    return _state(pid) not in ("", "Z")


def chat_screen(
    tmp_path: Path,
    workspace: Path,
    *args: str,
    height: int = 40,
    width: int = 80,
    under_shell: bool = False,
) -> TmuxScreen:
    """`agent-server chat` with its own home and sessions folder, in a 80-column tmux."""
    return TmuxScreen(
        [sys.executable, "-m", "agent_server", "chat", "--sessions-dir",
         str(tmp_path / "sessions"), *args],
        cwd=workspace,
        env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        height=height,
        width=width,
        under_shell=under_shell,
    )
