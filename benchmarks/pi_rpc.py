"""pi driven through its RPC mode: one process for the whole session, each prompt sent as a
`prompt` command, and the turn over when pi is idle (pi's docs/rpc.md, in its npm package).

Why not `pi --continue -p PROMPT`, one process per turn: when a request overflows in the middle
of a turn, pi compacts and schedules the retry on a timer (`setTimeout(() =>
agent.continue())`, dist/core/agent-session.js). `-p` has already returned from
`session.prompt` by then, so it disposes the session (dist/modes/print-mode.js), and the
retried turn runs on with every tool call answered "This extension ctx is stale after session
replacement or reload". A pi user's interactive session stays alive through the retry, and so
does RPC mode.

The turn is over when pi is idle. After each `agent_end` and `compaction_end` the driver asks
`get_state`, and the turn ends at the first answer that says neither streaming nor compacting,
unless a `compaction_end` announced a retry (`willRetry`) whose `agent_start` has not come yet.
pi starts that retry on a timer after the compaction ends, so `get_state` alone would call pi
idle in between. A turn fails, as `-p` exits 1, when its last answer is an error or was
aborted, or when pi refuses the prompt, exits, or outlasts the timeout.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    ok: bool
    text: str  # the turn's last answer
    error: str = ""


class PiRpc:
    """One `pi --mode rpc` process, a turn at a time."""

    def __init__(self, command: Sequence[str], cwd: Path, env: Mapping[str, str],
                 stderr: IO[str]) -> None:
        self._process = subprocess.Popen(list(command), cwd=cwd, env=dict(env),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr)
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._asked = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Each stdout record (split on LF only, as docs/rpc.md asks) as a JSON object."""
        stdout = self._process.stdout
        assert stdout is not None
        for raw in stdout:
            try:
                event = json.loads(raw.rstrip(b"\n").rstrip(b"\r"))
            except ValueError:
                continue
            if isinstance(event, dict):
                self._events.put(event)
        self._events.put(None)

    def _send(self, command: Mapping[str, Any]) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write((json.dumps(command) + "\n").encode("utf-8"))
            stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # pi is gone; the reader reports it

    def turn(self, prompt: str, timeout: float) -> TurnOutcome:
        deadline = time.monotonic() + timeout
        self._send({"id": f"prompt-{self._asked}", "type": "prompt", "message": prompt})
        retry_pending = False
        text, failure = "", ""
        while True:
            try:
                event = self._events.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                self._send({"type": "abort"})
                return TurnOutcome(False, text, f"no end within {timeout:.0f} s")
            if event is None:
                return TurnOutcome(False, text, f"pi exited ({self._process.wait()})")
            kind = event.get("type")
            if kind == "response" and event.get("command") == "prompt" \
                    and not event.get("success"):
                return TurnOutcome(False, text, str(event.get("error", "prompt refused")))
            if kind == "response" and event.get("id") == f"state-{self._asked}":
                state = event.get("data") or {}
                if not (state.get("isStreaming") or state.get("isCompacting") or retry_pending):
                    return TurnOutcome(not failure, text, failure)
            elif kind == "agent_start":
                retry_pending = False
            elif kind == "message_end":
                text, failure = _answer(event.get("message"), text, failure)
            if kind == "compaction_end" and event.get("willRetry"):
                retry_pending = True
            if kind in ("agent_end", "compaction_end"):
                self._asked += 1
                self._send({"id": f"state-{self._asked}", "type": "get_state"})

    def close(self, timeout: float = 30.0) -> None:
        stdin = self._process.stdin
        if stdin is not None:
            stdin.close()
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _answer(message: Any, text: str, failure: str) -> tuple[str, str]:
    """The text and the failure (if any) an assistant message leaves the turn with."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return text, failure
    parts = message.get("content")
    said = "".join(part.get("text", "") for part in parts
                   if isinstance(part, Mapping) and part.get("type") == "text") \
        if isinstance(parts, list) else ""
    stop = message.get("stopReason")
    if stop in ("error", "aborted"):
        return said or text, str(message.get("errorMessage") or f"answer {stop}")
    return said or text, ""
