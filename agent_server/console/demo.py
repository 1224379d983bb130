"""`agent-server demo`: a whole agent session over LSP against the built-in simulator.

It starts the simulator, starts `agent-server serve` as a subprocess on stdio, and drives it
as an editor would, through the built-in scenario in a sample repository: the live transcript,
the context meter, every compaction. It ends with what the session cost, and what the same
requests would have cost without prompt caching (from the simulator's own request log). No API
key and no network are needed.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from rich.console import Console
from rich.table import Table

from agent_server import protocol
from agent_server.console.render import TranscriptPrinter, format_tokens, shown
from agent_server.llm.cost import call_cost, uncached_cost
from agent_server.llm.messages import Usage
from agent_server.llm.models import BUILTIN_MODELS, ModelInfo
from agent_server.lsp.server import agent_converter
from agent_server.sim.records import RequestRecord
from agent_server.sim.scenario import default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace

DEMO_MODEL = "sim-small"


@dataclass
class DemoResult:
    turns: int
    calls: int
    summary_calls: int
    compactions: int
    cache_hit_rate: float
    cost: float
    uncached_cost: float
    seconds: float


def _model(model_id: str) -> ModelInfo:
    return next(model for model in BUILTIN_MODELS if model.id == model_id)


def bill(records: list[RequestRecord], model: ModelInfo) -> tuple[float, float, float]:
    """(cost, cost without caching, cache-read share of prompt tokens) from the log."""
    cost = uncached = 0.0
    read = prompt = 0
    for record in records:
        tokens = record.tokens
        if tokens is None or record.status != 200:
            continue
        cost += call_cost(
            model.pricing,
            input=tokens.input,
            output=tokens.output,
            cache_read=tokens.cache_read,
            cache_write_short=tokens.cache_write_5m,
            cache_write_long=tokens.cache_write_1h,
        ).total
        usage = Usage(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write)
        uncached += uncached_cost(usage, model.pricing)
        read += tokens.cache_read
        prompt += tokens.prompt
    return cost, uncached, read / prompt if prompt else 0.0


class DemoClient:
    """A minimal editor: an LSP client that prints what the server streams."""

    def __init__(self, printer: TranscriptPrinter) -> None:
        self.printer = printer
        self.client = LanguageClient("agent-server-demo", "1", converter_factory=agent_converter)
        self.compactions = 0
        self.approved: list[str] = []
        self._register()

    def _register(self) -> None:
        client, printer = self.client, self.printer

        def on_update(_ls: LanguageClient, params: Mapping[str, Any]) -> None:
            printer.update(params)

        def on_usage(_ls: LanguageClient, params: Mapping[str, Any]) -> None:
            printer.usage_changed(params)

        def on_compaction(_ls: LanguageClient, params: Mapping[str, Any]) -> None:
            if params["status"] == "completed":
                self.compactions += 1
            printer.compaction(params)

        def on_overflow(_ls: LanguageClient, params: Mapping[str, Any]) -> None:
            printer.overflow(params)

        def on_permission(_ls: LanguageClient, params: Mapping[str, Any]) -> Any:
            title = params["toolCall"]["title"]
            self.approved.append(title)
            printer.console.print(shown(f"  ? allowed once: {title}", "dim"))
            return {"outcome": {"selected": "allow_once"}}

        def on_mcp_status(_ls: LanguageClient, params: Mapping[str, Any]) -> None:
            # The demo configures no MCP server; one from the user's own mcp.json that
            # fails is worth a line, the rest (starting, ready, the tool count) is not.
            for server in params.get("servers") or ():
                if server.get("state") == "failed":
                    message = f"MCP server {server.get('name')} failed: {server.get('error', '')}"
                    printer.console.print(shown(f"  ! {message}", "yellow"))

        def on_show_message(_ls: LanguageClient, params: Any) -> None:
            printer.console.print(shown(f"  ! {getattr(params, 'message', params)}", "yellow"))

        def ignored(_ls: LanguageClient, params: Any) -> None:
            pass

        # Every notification the server sends (docs/protocol.md), handled or deliberately
        # ignored: pygls logs a warning for any other.
        handlers: dict[str, Callable[..., Any]] = {
            protocol.UPDATE.name: on_update,
            protocol.USAGE_CHANGED.name: on_usage,
            protocol.COMPACTION.name: on_compaction,
            protocol.OVERFLOW.name: on_overflow,
            protocol.CONTEXT.name: ignored,  # each decision is in the usage meter already
            protocol.MCP_STATUS.name: on_mcp_status,
            protocol.REQUEST_PERMISSION.name: on_permission,
            types.WINDOW_LOG_MESSAGE: ignored,  # the server's log; its stderr has it too
            types.WINDOW_SHOW_MESSAGE: on_show_message,
        }
        self.methods = frozenset(handlers)
        for method, handler in handlers.items():
            client.feature(method)(handler)

    async def request(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)


async def run_demo(
    console: Console | None = None, *, turns: int | None = None, log: Path | None = None
) -> DemoResult:
    console = console or Console(highlight=False)
    printer = TranscriptPrinter(console)
    scenario = default_scenario()
    prompts = list(scenario.prompts)[:turns] if turns else list(scenario.prompts)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="agent-server-demo-") as scratch:
        root = Path(scratch)
        workspace = root / "stockroom"
        workspace.mkdir()
        write_sample_workspace(workspace)
        simulator = Simulator(log_path=log)
        async with SimServer(simulator) as sim:
            console.rule("[bold]agent-server demo")
            console.print(
                f"simulator at {sim.base_url} · model {DEMO_MODEL} "
                f"({format_tokens(_model(DEMO_MODEL).context_window)} window) · "
                f"workspace {workspace}"
            )
            demo = DemoClient(printer)
            await demo.client.start_io(
                sys.executable, "-m", "agent_server", "serve", "--trust-editor-settings"
            )
            settings = {
                "provider": "sim",
                "baseUrl": sim.base_url,
                "model": DEMO_MODEL,
                "sessionsDir": str(root / "sessions"),
                "permissions": {"mode": "allowReads"},
            }
            await demo.client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), workspace.name)],
                    initialization_options={
                        "settings": settings,
                        "clientCapabilities": {"requestPermission": True},
                    },
                )
            )
            demo.client.initialized(types.InitializedParams())
            created = await demo.request(
                protocol.SESSION_NEW.name, {"workspaceUri": workspace.as_uri(), "title": "demo"}
            )
            session_id = created["sessionId"]
            for prompt in prompts:
                printer.prompt(prompt)
                result = await demo.request(
                    protocol.TURN.name, {"sessionId": session_id, "prompt": prompt}
                )
                printer.turn_ended(result)
            await demo.client.shutdown_async(None)
            demo.client.exit(None)
            await demo.client.stop()  # type: ignore[no-untyped-call]
        records = [r for r in simulator.records if r.tokens is not None]
        cost, uncached, hit_rate = bill(records, _model(DEMO_MODEL))
        summaries = sum(1 for r in records if r.source == "summary")
        result = DemoResult(
            turns=len(prompts),
            calls=len(records),
            summary_calls=summaries,
            compactions=demo.compactions,
            cache_hit_rate=hit_rate,
            cost=cost,
            uncached_cost=uncached,
            seconds=time.monotonic() - started,
        )
    console.print()
    console.print(summary_table(result))
    return result


def summary_table(result: DemoResult) -> Table:
    table = Table(title="the session", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("turns", str(result.turns))
    table.add_row("model calls", f"{result.calls} ({result.summary_calls} for summaries)")
    table.add_row("compactions", str(result.compactions))
    table.add_row("cache-read share of input", f"{result.cache_hit_rate:.1%}")
    table.add_row("cost at list prices", f"${result.cost:.4f}")
    table.add_row("the same requests without caching", f"${result.uncached_cost:.4f}")
    if result.uncached_cost:
        table.add_row("saved by caching", f"{1 - result.cost / result.uncached_cost:.0%}")
    table.add_row("time", f"{result.seconds:.1f}s")
    return table


def main(turns: int | None = None, log: Path | None = None) -> int:
    result = asyncio.run(run_demo(turns=turns, log=log))
    return 0 if result.calls else 1
