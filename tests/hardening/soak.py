"""The crash soak: kill the server (SIGKILL) at random points across many turns, reopen, check.

    make soak                                   # 40 kills
    .venv/bin/python -m tests.hardening.soak --kills 100 --seed 7

Each round starts `agent-server serve` over real stdio against the simulator (the built-in
scenario: reads, greps, bash commands, writes, compactions on a 32k window), opens the
session (new in the first round), sends the scenario's prompts one after another, and
kills the server after a random delay. Then, in this process, the ledger must:

- open (Ledger.open repairs what a kill can leave: a torn last line, tool calls without a
  result) and report only those repairs, never a skipped line;
- hold every entry the editor was told about (userMessage updates, the entries on the
  page every load showed): an acknowledged entry is never lost;
- be a valid conversation by itself after the repair: every tool call on the branch has a
  result.

Not run in CI (minutes of wall time); the exit code says whether every round held.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_server.agent.workspace import HOLDER_EXIT_WAIT
from agent_server.errors import SessionLockedError
from agent_server.llm.messages import AssistantMessage, ToolResultMessage
from agent_server.session.entries import MessageEntry
from agent_server.session.ledger import Ledger
from agent_server.session.store import SessionStore
from agent_server.sim.scenario import default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from tests.hardening.raw import RawServer, request


def open_when_free(path: Path) -> Ledger:
    """The ledger, opened as a load opens a session (agent/workspace.py, `open_when_free`):
    tried again while it is held, for up to HOLDER_EXIT_WAIT seconds. A command's process,
    forked by the killed server and not yet exec'd, shares its descriptor for a moment."""
    deadline = time.monotonic() + HOLDER_EXIT_WAIT
    while True:
        try:
            return Ledger.open(path)
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


class Soak:
    def __init__(self, root: Path, sim: SimServer, rng: random.Random) -> None:
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        write_sample_workspace(self.workspace)
        self.sessions = root / "sessions"
        self.sim = sim
        self.rng = rng
        self.session_id: str | None = None
        self.acknowledged: set[str] = set()
        self.prompts = default_scenario().prompts
        self.next_prompt = 0
        self.turns_sent = 0
        self.turns_done = 0
        self.aborted_calls = 0
        self.torn_lines = 0

    def settings(self) -> dict[str, Any]:
        return {
            "provider": "sim",
            "model": "sim-small",
            "baseUrl": self.sim.base_url,
            "sessionsDir": str(self.sessions),
            "permissions": {"mode": "allowAll"},
        }

    async def round(self, number: int) -> None:
        server = await RawServer.start()
        server.hang_guard = 600.0  # a soak runs long on a shared machine; a hang still ends it
        try:
            await server.initialize(self.workspace, self.settings())
            if self.session_id is None:
                await server.send_message(
                    request("open", "agent/session/new", {"workspaceUri": self.workspace.as_uri()})
                )
                self.session_id = (await server.answer("open"))["result"]["sessionId"]
            else:
                await server.send_message(
                    request("open", "agent/session/load", {"sessionId": self.session_id})
                )
                loaded = (await server.answer("open"))["result"]
                # The latest page: the entries it shows are acknowledged too.
                self.acknowledged |= {
                    item.get("entryId") or item.get("messageId")
                    for item in loaded["transcript"]
                    if item.get("entryId") or item.get("messageId")
                }
            deadline = time.monotonic() + self.rng.uniform(0.2, 6.0)
            while time.monotonic() < deadline:
                prompt = self.prompts[self.next_prompt % len(self.prompts)]
                self.next_prompt += 1
                turn_id = f"turn-{number}-{self.turns_sent}"
                self.turns_sent += 1
                await server.send_message(
                    request(turn_id, "agent/turn", {"sessionId": self.session_id, "prompt": prompt})
                )
                try:
                    await asyncio.wait_for(
                        server.answer(turn_id), max(0.01, deadline - time.monotonic())
                    )
                    self.turns_done += 1
                except TimeoutError:
                    break
        finally:
            for message in server.messages:
                update = message.get("params", {}).get("update", {})
                if message.get("method") == "agent/update" and update.get("kind") == "userMessage":
                    self.acknowledged.add(update["entryId"])
            server.process.send_signal(signal.SIGKILL)
            await server.process.wait()
            await server.close()
        self.check(number)

    def check(self, number: int) -> None:
        assert self.session_id is not None
        path = SessionStore(self.sessions, self.workspace).ledger_path(self.session_id)
        with open_when_free(path) as ledger:
            report = ledger.load_report
            bad = [i for i in report.issues if i.action not in ("truncated", "newline_added")]
            if bad:
                raise AssertionError(f"round {number}: unexpected damage {bad}")
            self.torn_lines += sum(1 for i in report.issues if i.action == "truncated")
            self.aborted_calls += len(report.aborted_tool_calls)
            lost = {e for e in self.acknowledged if e not in ledger.tree}
            if lost:
                raise AssertionError(f"round {number}: lost acknowledged entries {lost}")
            answered = {
                e.message.tool_call_id
                for e in ledger.tree.branch()
                if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
            }
            for entry in ledger.tree.branch():
                if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                    missing = [c.id for c in entry.message.tool_calls if c.id not in answered]
                    if missing:
                        raise AssertionError(f"round {number}: calls without a result {missing}")


async def soak(kills: int, seed: int) -> int:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="agent-soak-") as tmp:
        async with SimServer(Simulator()) as sim:
            run = Soak(Path(tmp), sim, rng)
            for number in range(1, kills + 1):
                try:
                    await run.round(number)
                except AssertionError as failure:
                    print(f"FAILED: {failure}", file=sys.stderr)
                    return 1
                print(
                    f"round {number}/{kills}: {run.turns_done} turns done of {run.turns_sent} "
                    f"sent, {len(run.acknowledged)} entries acknowledged, "
                    f"{run.aborted_calls} tool calls aborted, {run.torn_lines} torn lines",
                    flush=True,
                )
    print(
        f"held: {kills} SIGKILLs over {run.turns_sent} turns; no acknowledged entry lost, "
        f"every reopen consistent ({run.aborted_calls} tool calls answered as aborted, "
        f"{run.torn_lines} torn lines cut)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    return asyncio.run(soak(args.kills, args.seed))


if __name__ == "__main__":
    raise SystemExit(main())
