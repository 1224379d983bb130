"""Drive `agent-server acp` over real stdio with the ACP Python SDK's own client.

`start_acp` spawns `agent_server acp` (forked: tests/forked_agent.py) against a simulator on
loopback (the pytest `sim` fixture, so a test can inject faults), initializes it, and yields
the SDK's ClientSideConnection with a `RecordingClient`: every session/update, every
permission question (answered by `answer`), and the editor's buffers for fs/read_text_file
and fs/write_text_file.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    InitializeResponse,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from agent_server.sim.scenario import default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from tests import forked_agent

# The built-in scenario's prompts (sim/scenarios/default.yaml), in its order.
PROMPTS = default_scenario().prompts
OVERVIEW, MODELS = PROMPTS[0], PROMPTS[1]
SCENARIO = list(PROMPTS[:6])  # six turns: enough to compact on the 32k sim-small
MORE_SCENARIO = list(PROMPTS[6:8])
WRITE_NOTE = next(p for p in PROMPTS if p.startswith("Write a scratch note"))
EDIT_NOTE = next(p for p in PROMPTS if p.startswith("Add a fourth finding"))

Answer = Callable[[ToolCallUpdate, list[PermissionOption]], str | None]


def allow_once(_call: ToolCallUpdate, _options: list[PermissionOption]) -> str | None:
    return "allow_once"


@dataclass
class RecordingClient:
    """An editor as the protocol sees it. `buffers` (absolute path -> text) shadow the disk
    for fs/read_text_file (unsaved changes); fs/write_text_file sets the buffer and saves it,
    as Zed does."""

    answer: Answer = allow_once
    buffers: dict[str, str] = field(default_factory=dict)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    questions: list[ToolCallUpdate] = field(default_factory=list)
    options: list[list[PermissionOption]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    hold: asyncio.Event | None = None  # when set, permission answers wait for it

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.questions.append(tool_call)
        self.options.append(options)
        if self.hold is not None:
            await self.hold.wait()
        choice = self.answer(tool_call, options)
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append(path)
        self.buffers[path] = content
        await asyncio.to_thread(Path(path).write_text, content, encoding="utf-8")
        return WriteTextFileResponse()

    def of(self, kind: str, session_id: str | None = None) -> list[Any]:
        """The updates of one kind (`tool_call`, `agent_message_chunk`, ...), in order."""
        return [
            update
            for sid, update in self.updates
            if update.session_update == kind and (session_id is None or sid == session_id)
        ]

    def text(self, session_id: str | None = None) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk", session_id))

    def tool_results(self) -> dict[str, Any]:
        """The last update of each tool call, by id."""
        last: dict[str, Any] = {}
        for update in self.of("tool_call_update"):
            if update.status in ("completed", "failed"):
                last[update.tool_call_id] = update
        return last


@dataclass
class AcpProcess:
    conn: ClientSideConnection
    client: RecordingClient
    process: Any
    init: InitializeResponse

    async def new_session(self, cwd: Path) -> str:
        return (await self.conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id

    async def prompt(self, session_id: str, text: str) -> Any:
        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    # The one place the tests reach below the SDK's public client: its client (0.12.1) has no
    # method for two stable ACP 1.7 messages, `session/delete` and `$/cancel_request` (its
    # `ext_method` / `ext_notification` prefix the name with `_`), so these use its JSON-RPC
    # connection (`_conn`, private). The TypeScript client (tests/acp/node) sends both through
    # its public API.

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A request the SDK's client has no method for, by its ACP name."""
        return await self.conn._conn.send_request(method, params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """A notification the SDK's client has no method for, by its ACP name."""
        await self.conn._conn.send_notification(method, params)

    def next_request_id(self) -> int:
        """The id the connection gives its next request (what `$/cancel_request` names)."""
        request_id: int = self.conn._conn._next_request_id
        return request_id


# Seconds the agent has to exit once its input is closed, before the SDK terminates it (its
# default, 2 s, is less than a busy machine takes, and its terminate then races the exit:
# ProcessLookupError). A hang guard: the agent's close is bounded.
SHUTDOWN_WAIT = 60.0


def acp_args(sim: SimServer, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--provider", "sim",
        "--base-url", sim.base_url,
        "--sessions-dir", str(tmp_path / "sessions"),
        *extra,
    ]


@asynccontextmanager
async def start_acp(
    args: list[str],
    tmp_path: Path,
    client: RecordingClient | None = None,
    *,
    fs: bool = True,
    terminal: bool = False,
) -> AsyncIterator[AcpProcess]:
    """`agent-server acp ARGS` with no config file of the user's, initialized."""
    client = client or RecordingClient()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    user_config = tmp_path / "config" / "agent-server" / "config.json"
    if not user_config.exists():  # a busy test machine may take more than the default's
        # seconds to start a fixture MCP server: the first request waits for it (a test of
        # the wait passes its own --config)
        user_config.parent.mkdir(parents=True, exist_ok=True)
        user_config.write_text(json.dumps({"mcp": {"firstRequestWait": 120}}))
    with (tmp_path / "acp-stderr.log").open("ab") as stderr:
        async with spawn_agent_process(
            client,
            *forked_agent.command("acp", *args),
            env=env,
            transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": SHUTDOWN_WAIT},
        ) as (conn, process):
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
                    terminal=terminal,
                ),
            )
            yield AcpProcess(conn, client, process, init)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    write_sample_workspace(path)
    return path.resolve()


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    async with SimServer(Simulator()) as server:
        yield server
