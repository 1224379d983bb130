"""The editor path: what the language server adds between the model and the editor.

`agent-server serve` runs as a subprocess on stdio, driven by a pygls client (as an editor
would), against a simulator running in a thread of this process. The simulator's ASGI app
is wrapped so that the moment it hands its first text delta to the HTTP server is recorded;
the client records the moment each `agent/update` notification arrives. Both clocks are
time.perf_counter (CLOCK_MONOTONIC, shared by the processes of one machine).

- latency: for short answers (one model call each), first text byte out of the simulator ->
  first `messageChunk` update in the client: the server's HTTP client and SDK, the agent's
  event path, JSON-RPC encoding, the pipe and the client's decoding. The first turn (cold:
  the server's first request) apart; median and p90 of the others;
- throughput: one long streamed answer (8 tokens per text delta, one update per delta):
  `agent/update` notifications per second, from the first to the last the client receives.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.lsp.server import agent_converter
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from benchmarks.long_session_bench import SERVE

MODEL = "sim-large"


def probe_first_text(app: ASGIApp, marks: list[float]) -> ASGIApp:
    """`app`, recording when each Messages response hands over its first text delta."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).endswith("/messages"):
            await app(scope, receive, send)
            return
        seen = False

        async def probe(message: Message) -> None:
            nonlocal seen
            if (
                not seen
                and message["type"] == "http.response.body"
                and b"text_delta" in message.get("body", b"")
            ):
                seen = True
                marks.append(time.perf_counter())
            await send(message)

        await app(scope, receive, probe)

    return wrapped


def scenario(probes: int, long_tokens: int) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [
        {
            "user": f"Latency probe {n}: say hello.",
            "steps": [{"text": f"Hello {n}.", "textTokens": 40}],
        }
        for n in range(probes)
    ]
    turns.append(
        {
            "user": "Stream a long answer.",
            "steps": [{"text": "Here is the long answer.", "textTokens": long_tokens}],
        }
    )
    return {"name": "editor-bench", "turns": turns}


async def measure(probes: int, long_tokens: int) -> dict[str, Any]:
    marks: list[float] = []
    simulator = Simulator(scenario=parse_scenario(scenario(probes, long_tokens), "editor-bench"))
    simulator.app = probe_first_text(simulator.app, marks)
    updates: list[tuple[float, str, str]] = []  # (arrival, turnId, kind)
    texts: dict[str, list[str]] = {}  # the text chunks of each turn
    client = LanguageClient("agent-server-bench", "1", converter_factory=agent_converter)

    def on_update(_ls: LanguageClient, params: Mapping[str, Any]) -> None:
        update = params["update"]
        updates.append((time.perf_counter(), str(params["turnId"]), update["kind"]))
        if update["kind"] == "messageChunk":
            texts.setdefault(str(params["turnId"]), []).append(update["content"]["text"])

    client.feature("agent/update")(on_update)
    for method in (
        "agent/usage",
        "agent/compaction",
        "agent/overflow",
        "agent/context",
        types.WINDOW_LOG_MESSAGE,
    ):
        client.feature(method)(lambda _ls, _params: None)

    handle = SimServer(simulator).run_in_thread()
    try:
        with tempfile.TemporaryDirectory(prefix="editor-bench-") as scratch:
            workspace = Path(scratch) / "workspace"
            workspace.mkdir()
            await client.start_io(*SERVE)
            settings = {
                "provider": "sim",
                "baseUrl": handle.base_url,
                "model": MODEL,
                "sessionsDir": str(Path(scratch) / "sessions"),
                "permissions": {"mode": "allowAll"},
            }
            await client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "workspace")],
                    initialization_options={"settings": settings},
                )
            )
            client.initialized(types.InitializedParams())

            async def request(method: str, params: Any) -> Any:
                return await client.protocol.send_request_async(method, params)

            created = await request("agent/session/new", {"workspaceUri": workspace.as_uri()})
            session_id = created["sessionId"]
            latencies: list[float] = []
            for number in range(probes):
                sent = len(marks)
                result = await request(
                    "agent/turn",
                    {"sessionId": session_id, "prompt": f"Latency probe {number}: say hello."},
                )
                turn = str(result["turnId"])
                first = next(
                    t for t, tid, kind in updates if tid == turn and kind == "messageChunk"
                )
                latencies.append(first - marks[sent])
            started = time.perf_counter()
            result = await request(
                "agent/turn", {"sessionId": session_id, "prompt": "Stream a long answer."}
            )
            turn_seconds = time.perf_counter() - started
            turn = str(result["turnId"])
            long_stop = str(result["stopReason"])
            stream = [t for t, tid, _kind in updates if tid == turn]
            streamed = "".join(texts.get(turn, []))
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()  # type: ignore[no-untyped-call]
    finally:
        handle.stop()
    span = stream[-1] - stream[0] if len(stream) > 1 else 0.0
    # The first turn is cold (the server imports and warms its streaming path): apart.
    cold, warm = latencies[0], sorted(latencies[1:])
    return {
        "probes": probes,
        "latency_ms_cold": cold * 1e3,
        "latency_ms_median": statistics.median(warm) * 1e3,
        "latency_ms_p90": warm[int(len(warm) * 0.9)] * 1e3,
        "latency_ms_min": warm[0] * 1e3,
        "updates": len(stream),  # chunks that leave the server together are one update
        "streamed_characters": len(streamed),
        "updates_per_second": (len(stream) - 1) / span if span else 0.0,
        "long_answer_tokens": long_tokens,
        "long_turn_seconds": turn_seconds,
        "long_turn_stop": long_stop,
    }


def run(quick: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    # The long answer stays below sim-large's 16k output limit, so it is never cut off.
    result = asyncio.run(measure(8 if quick else 30, 6_000 if quick else 15_000))
    result["seconds"] = time.perf_counter() - started
    return result


if __name__ == "__main__":
    print(run(quick=True))
