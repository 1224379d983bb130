"""A terminal program as a person sees it: run in tmux (a private server), keys sent with
send-keys, the screen read with capture-pane, at a fixed size (80 columns by default)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path


class TmuxScreen:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        width: int = 80,
        height: int = 40,
    ) -> None:
        self.socket = f"agent-server-test-{uuid.uuid4().hex[:8]}"
        command = " ".join(
            ["cd", shlex.quote(str(cwd)), "&&", "exec", "env", "-i"]
            + [shlex.quote(f"{k}={v}") for k, v in env.items()]
            + [shlex.quote(a) for a in argv]
        )
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

    def wait_for(self, text: str, timeout: float = 180, *, count: int = 1) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the screen:\n{screen}")
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def chat_screen(
    tmp_path: Path, workspace: Path, *args: str, height: int = 40, width: int = 80
) -> TmuxScreen:
    """`agent-server chat` with its own home and sessions folder, in a 80-column tmux."""
    return TmuxScreen(
        [sys.executable, "-m", "agent_server", "chat", "--sessions-dir",
         str(tmp_path / "sessions"), *args],
        cwd=workspace,
        env={"TERM": "xterm-256color", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        height=height,
        width=width,
    )
