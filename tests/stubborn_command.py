"""A turn whose command will not stop when asked: it outlives SIGTERM, in a process group of
its own (the bash tool's), and writes that group's id to `pgid` in the workspace. Stopping it
takes the kill's grace (SIGTERM, then SIGKILL), as a slow stop does; left alone, it runs on.
Shared by the tests of the chat, the language server and the ACP agent being ended; they
run it unsandboxed (the sandbox's own process ids are not this machine's)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

# On SIGTERM it writes `got-term` and goes on (a waiting `wait` returns to run the trap; the
# sleep it waited for died of the signal, and the next one starts): a test sees the stop begin
# (the kill's grace running) at once, without a screen to read.
STUBBORN = ("echo $$ > pgid; trap 'echo > got-term' TERM; echo ready; "
            "while :; do sleep 60 & wait; done")
PROMPT = "run it"
SCENARIO: dict[str, Any] = {
    "name": "stopping",
    "turns": [
        {
            "user": PROMPT,
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": STUBBORN}}]},
                {"text": "It ran."},
            ],
        },
        {"user": "hello", "steps": [{"text": "Hello."}]},
    ],
}


def wait_for_group(workspace: Path) -> int:
    """The command's process group, once it has written it (or a failed test's error)."""
    pgid = workspace / "pgid"
    deadline = time.monotonic() + 60
    while not pgid.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pgid.exists(), "the command never ran"
    text = pgid.read_text()
    while not text.endswith("\n") and time.monotonic() < deadline:  # written, not writing
        time.sleep(0.1)
        text = pgid.read_text()
    group = int(text)
    # Not a sandbox's own process ids (a pid namespace): the group must be seen running.
    assert group_running(group), f"no group {group} running here: is the command sandboxed?"
    return group


def wait_for_term(workspace: Path) -> None:
    """Until the command has been sent SIGTERM (the stop has begun; SIGKILL follows after the
    kill's grace): polled often, since the grace is short."""
    deadline = time.monotonic() + 60
    while not (workspace / "got-term").exists():
        assert time.monotonic() < deadline, "the command was never sent SIGTERM"
        time.sleep(0.005)


def group_running(pgid: int) -> list[int]:
    """The processes of group `pgid` still running (zombies, waiting to be reaped, are
    not)."""
    running = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdecimal():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            running.append(int(entry.name))
    return running


def last_ledger_message(sessions: Path) -> dict[str, Any]:
    """The message of the last entry in the one session's ledger under `sessions`."""
    (ledger,) = sessions.rglob("*.jsonl")
    message: dict[str, Any] = json.loads(ledger.read_text().splitlines()[-1])["message"]
    return message
