"""The harness at scale: per-turn time, session open time and memory as the ledger grows.

For each size (100, 1k, 10k, 100k ledger entries) a session ledger is built with
ledger_bench's realistic turns (prompts, tool round trips, answers with usage, compactions
near a 128k window), ending with a compaction followed by ~100 entries, so that the model
sees about the same context at every size (the 100-entry session has no compaction and
shows all of it): what changes is only how much history lies behind it. Each size is then
measured in its own interpreter, so that sizes (and whatever ran before in this process) do
not pollute each other:

- session open time (`WorkspaceAgent.open`: load the ledger, rebuild totals; median of 3)
  and resident memory after the first open (/proc/self/statm);
- per turn, the work the harness does around each model call, through the real code:
  `ContextManager.prepare` (projection + estimate + decision, exactly what the turn loop
  runs before a call), `anthropic.build_request` (the provider's request), the usage
  snapshot pushed after the answer (`usage_snapshot`), and the two ledger appends (the
  answer, the tool result);
- the SDK's own serialisation of the same request: `Anthropic().messages.create(**params)`
  up to the moment its HTTP transport is handed the request (an in-memory transport), as
  the baseline the harness time is divided by. The pieces are timed in turn within each
  repeat (time.perf_counter), so that the machine's noise falls on all alike; medians.

A last row repeats the largest size with a context just below sim-large's compaction
threshold (170k tokens): the largest request the harness builds.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from agent_server.agent.model_call import RetryPolicy
from agent_server.agent.model_setup import connect
from agent_server.agent.settings import AgentSettings
from agent_server.agent.system_prompt import build_system_prompt
from agent_server.agent.tools import default_tools
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.context.estimate import estimate_context_tokens, estimate_tokens
from agent_server.context.projection import project
from agent_server.llm import anthropic as anthropic_api
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agent_server.llm.stream import CallOptions
from agent_server.session.entries import CompactionEntry, ModelChangeEntry, SystemPromptEntry
from agent_server.session.ledger import Ledger
from agent_server.session.store import SessionStore
from benchmarks.ledger_bench import WORDS, build_session

SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000, 10_000)
MODEL = "sim-large"
VISIBLE_ENTRIES = 100  # entries after the last compaction: what the model sees
FULL_WINDOW_TOKENS = 170_000  # the extra row: a context just below sim-large's threshold
_PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_mb() -> float:
    """This process's resident set, in MB (/proc/self/statm)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * _PAGE / 1e6


def _settings(sessions_dir: Path) -> AgentSettings:
    # The provider is never called: the simulator's address is a placeholder.
    return AgentSettings(
        provider="sim",
        base_url="http://127.0.0.1:9",
        model=MODEL,
        sessions_dir=str(sessions_dir),
        permissions_mode="allowAll",
    )


def _agent(sessions_dir: Path, workspace: Path) -> WorkspaceAgent:
    return WorkspaceAgent(
        workspace,
        _settings(sessions_dir),
        connect_to=lambda settings: connect(settings, env={}),
        retry=RetryPolicy(max_retries=0),  # the model is never called; fail fast if it is
        env={},
        watch_files=False,
    )


@dataclass
class BuiltLedger:
    entries: int
    sessions_dir: Path
    workspace: Path
    session_id: str
    path: Path
    build_seconds: float


def build_ledger(directory: Path, entries: int) -> BuiltLedger:
    workspace = directory / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    sessions_dir = directory / "sessions"
    store = SessionStore(sessions_dir, workspace, fsync="never")
    started = time.perf_counter()
    ledger = store.create(workspace, title=f"bench {entries}", model=MODEL)
    ledger.add(ModelChangeEntry, anthropic_api.API, MODEL)
    ledger.add(SystemPromptEntry, build_system_prompt(workspace.resolve()))
    if entries > 2 * VISIBLE_ENTRIES:
        build_session(ledger, entries - VISIBLE_ENTRIES)
        ledger.add(
            CompactionEntry,
            summary="## Goal\n" + "Keep the parser fast and correct. " * 80,
            first_kept_entry_id=None,
            tokens_before=100_000,
            tokens_after=None,
            reason="threshold",
        )
    build_session(ledger, entries, seed=11)
    ledger.sync()
    path = ledger.path
    session_id = ledger.session_id
    ledger.close()
    return BuiltLedger(
        entries, sessions_dir, workspace, session_id, path, time.perf_counter() - started
    )


def fill_context(built: BuiltLedger, tokens: int, seed: int = 5) -> None:
    """Append tool round trips (~1.5k-token results) until the harness's own estimate of
    what the model sees reaches `tokens`, as in a session just below the compaction
    threshold."""
    rng = random.Random(seed)
    system_prompt = build_system_prompt(built.workspace.resolve())
    specs = tuple(tool.spec for tool in default_tools())

    def text(chars: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(chars // 5))

    def visible(ledger: Ledger) -> int:
        projection = project(ledger.tree.projection_entries())
        context = Context(system_prompt, specs, projection.messages)
        return estimate_context_tokens(context, fresh_from=projection.fresh_from).tokens

    with Ledger.open(built.path, fsync="never") as ledger:
        ledger.append_message(UserMessage.of_text(text(400)))
        current = visible(ledger)
        number = 0
        while current < tokens:
            number += 1
            call = ToolCall(f"fill_{number}", "read", {"path": f"src/module_{number}.py"})
            step = AssistantMessage((TextContent(text(200)), call), "toolUse", model=MODEL)
            current += estimate_tokens(step)
            usage = Usage(input=200, cache_read=current - 200, output=60)
            ledger.append_message(replace(step, usage=usage))
            ledger.append_message(ToolResultMessage(call.id, "read", (TextContent(text(6_000)),)))
            current = visible(ledger)
        built.entries = ledger.entry_count
        ledger.sync()


class SdkSerialisation:
    """The Anthropic SDK building and serialising a request, up to its transport."""

    def __init__(self) -> None:
        self.reached = 0.0

        def handler(request: httpx2.Request) -> httpx2.Response:
            self.reached = time.perf_counter()
            return httpx2.Response(200, headers={"content-type": "text/event-stream"})

        self.client = anthropic.Anthropic(
            api_key="benchmark",
            base_url="http://sdk.invalid",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        )

    def seconds(self, params: dict[str, Any]) -> float:
        start = time.perf_counter()
        stream = self.client.messages.create(**params)
        elapsed = self.reached - start
        stream.close()
        return elapsed


async def measure_turn(agent: WorkspaceAgent, session_id: str, repeat: int) -> dict[str, Any]:
    """Per-turn harness time and the SDK's serialisation of the same request (ms). The
    pieces are timed in turn within each repeat, so that the machine's noise falls on all
    of them alike; medians."""
    session = agent.open(session_id)
    snapshot_before = session.usage.snapshot()
    if snapshot_before.used > snapshot_before.compact_at:
        raise RuntimeError(
            f"the context ({snapshot_before.used} tokens) is over the compaction threshold "
            f"({snapshot_before.compact_at}): every prepare would compact"
        )
    options = CallOptions(session_id=session.session_id, cache_retention="short")
    sdk = SdkSerialisation()
    context = (await session.context.prepare()).context
    params = anthropic_api.build_request(session.model, context, options)
    samples: dict[str, list[float]] = {"prepare": [], "build": [], "snapshot": [], "sdk": []}
    for number in range(repeat + 3):  # the first three warm every path up
        start = time.perf_counter()
        await session.context.prepare()
        prepared = time.perf_counter()
        anthropic_api.build_request(session.model, context, options)
        built = time.perf_counter()
        session.usage.snapshot()
        snapshot = time.perf_counter()
        sdk_seconds = sdk.seconds(params)
        if number >= 3:
            samples["prepare"].append(prepared - start)
            samples["build"].append(built - prepared)
            samples["snapshot"].append(snapshot - built)
            samples["sdk"].append(sdk_seconds)
    prepare, build_seconds, snapshot, sdk_seconds = (
        statistics.median(samples[key]) for key in ("prepare", "build", "snapshot", "sdk")
    )
    tokens = session.usage.snapshot().used
    appends = []
    for number in range(max(5, repeat // 4)):
        call = ToolCall(f"bench_{number}", "read", {"path": f"src/module_{number}.py"})
        answer = AssistantMessage(
            (TextContent("Reading the next module."), call),
            "toolUse",
            usage=Usage(input=10, cache_read=tokens, output=20),
            model=MODEL,
        )
        result = ToolResultMessage(call.id, "read", (TextContent("x = 1\n" * 200),))
        start = time.perf_counter()
        session.ledger.append_message(answer)
        session.ledger.append_message(result)
        appends.append(time.perf_counter() - start)
    append = statistics.median(appends)
    harness = prepare + build_seconds + snapshot + append
    return {
        "context_messages": len(context.messages),
        "context_tokens": tokens,
        "prepare_ms": prepare * 1e3,
        "build_ms": build_seconds * 1e3,
        "snapshot_ms": snapshot * 1e3,
        "append_ms": append * 1e3,
        "harness_ms": harness * 1e3,
        "sdk_ms": sdk_seconds * 1e3,
        "vs_sdk": harness / sdk_seconds if sdk_seconds else 0.0,
    }


def _measure_here(sessions_dir: Path, workspace: Path, session_id: str, repeat: int) -> None:
    """In a fresh interpreter: open time and memory, then the per-turn figures."""

    async def main() -> dict[str, Any]:
        agent = _agent(sessions_dir, workspace)
        before = resident_mb()
        times = []
        after = before
        for number in range(3):
            start = time.perf_counter()
            agent.open(session_id)
            times.append(time.perf_counter() - start)
            if number == 0:
                after = resident_mb()
            await agent.close()
        try:
            turn = await measure_turn(agent, session_id, repeat)
        finally:
            await agent.close()
        return {
            "open_ms": statistics.median(times) * 1e3,
            "rss_before_mb": before,
            "rss_mb": after,
            "rss_delta_mb": after - before,
            **turn,
        }

    print(json.dumps(asyncio.run(main())))


def measure_size(built: BuiltLedger, repeat: int) -> dict[str, Any]:
    """One row: measured in its own interpreter, so that sizes (and whatever ran before in
    this process) do not pollute each other's memory or timings."""
    root = Path(__file__).resolve().parent.parent
    command = [
        sys.executable,
        "-m",
        "benchmarks.harness_bench",
        "--measure",
        str(built.sessions_dir),
        str(built.workspace),
        built.session_id,
        str(repeat),
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {built.entries} entries failed:\n{done.stderr}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "entries": built.entries,
        "file_mb": built.path.stat().st_size / 1e6,
        "build_seconds": built.build_seconds,
        **row,
    }


def run(
    sizes: Sequence[int] = SIZES,
    repeat: int = 60,
    progress: Any = None,
    *,
    full_window: bool = True,
) -> dict[str, Any]:
    """One row per size, plus (`full_window`) the largest size again with a context just
    below the window, for the absolute per-turn cost of the biggest request."""
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for entries in sizes:
        with tempfile.TemporaryDirectory(prefix="harness-bench-") as directory:
            if progress is not None:
                progress(f"harness: {entries:,} entries")
            built = build_ledger(Path(directory), entries)
            rows.append(measure_size(built, repeat))
            if full_window and entries == sizes[-1]:
                fill_context(built, FULL_WINDOW_TOKENS)
                if progress is not None:
                    progress(f"harness: {built.entries:,} entries, a context near the window")
                rows.append(measure_size(built, repeat))
    return {"rows": rows, "seconds": time.perf_counter() - started}


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--measure":
        _measure_here(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    else:
        print(json.dumps(run(QUICK_SIZES, full_window=False), indent=2))
