"""The MCP servers of one session: started together, watched, reconfigured, stopped.

`McpServers` owns one `McpConnection` per configured server and tells its listener whenever
any of them changes state or tools. It never raises for a server's sake: a server that
cannot start is a failed server in the status, and the session goes on without it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from agent_server.agent.mcp.approval import (
    NO_ANSWERS,
    ApprovedFiles,
    McpFileAnswers,
    PendingApproval,
    held_reason,
    pending_approval,
)
from agent_server.agent.mcp.config import McpServerConfig, McpTransport
from agent_server.agent.mcp.tool_list import ServerTool
from agent_server.protocol import McpServerState

if TYPE_CHECKING:  # the SDK takes seconds to import: only sessions with servers load it
    import mcp_types

    from agent_server.agent.mcp.connection import McpConnection

log = logging.getLogger(__name__)

ServerState: TypeAlias = McpServerState
ConnectMode: TypeAlias = Literal["auto", "legacy"]

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 600.0


class McpUnavailableError(Exception):
    """A call to a server that is not ready; the message says why, for the model."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What the editor shows about one server."""

    name: str
    state: ServerState
    transport: McpTransport
    target: str  # the command line or URL, secrets scrubbed
    tools: tuple[str, ...]  # the server's own tool names, as it lists them now
    trusted: bool
    source: str
    error: str | None = None
    stderr_tail: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "state": self.state,
            "transport": self.transport,
            "target": self.target,
            "tools": list(self.tools),
            "trusted": self.trusted,
            "source": self.source,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.stderr_tail:
            out["stderrTail"] = self.stderr_tail
        return out


class McpServers:
    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        *,
        state_dir: Path,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        root: Path | None = None,
        mode: ConnectMode = "auto",
        max_result_bytes: int | None = None,
        approvals: ApprovedFiles | None = None,
        answers: McpFileAnswers = NO_ANSWERS,
    ) -> None:
        """`root`: the workspace, offered to servers that ask for the client's roots.
        `max_result_bytes`: the most one message from a stdio server may have (None: 64 MB).
        `approvals`: the workspace file contents approved for good; with it, servers from a
        workspace file wait for the user's approval of its content (approval.py).
        `answers`: what the user answered about those contents earlier in this session (a
        session reopened: `PermissionChoices`)."""
        self._state_dir = state_dir
        self._max_result_bytes = max_result_bytes
        self._approvals = approvals
        self._answers = answers  # digests approved or declined for this session
        self._configs: dict[str, McpServerConfig] = {}  # as configured (held ones too)
        self._root = root
        self._startup_timeout = startup_timeout
        self._tool_timeout = tool_timeout
        self._mode = mode
        self._listeners: list[Callable[[], None]] = []
        self._connections: dict[str, McpConnection] = {
            config.name: self._connection(config) for config in configs
        }
        self._started = False
        self._closed = False  # closed: nothing starts again (a restart under way ends there)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start every server in the background; needs a running event loop. Idempotent."""
        if self._started:
            return
        self._started = True
        for connection in self._connections.values():
            self._launch(connection)

    def _launch(self, connection: McpConnection) -> None:
        """Start a connection made after `start`, unless the servers were closed meanwhile:
        a restart or a new configuration that was stopping the old server when the session
        closed would otherwise leave the new one running, owned by nobody."""
        if self._started and not self._closed:
            connection.start()

    @property
    def started(self) -> bool:
        return self._started

    async def wait_settled(self) -> None:
        """Until every server is ready or failed (each has its own startup deadline)."""
        self.start()
        await asyncio.gather(*(c.wait_settled() for c in self._connections.values()))

    async def reconfigure(self, configs: Sequence[McpServerConfig]) -> None:
        """Stop the servers that are gone or changed, start the new or changed ones."""
        wanted = {config.name: config for config in configs}
        gone = [n for n in self._connections if wanted.get(n) != self._configs.get(n)]
        if not gone and set(wanted) == set(self._connections):
            return
        stopping = [self._connections.pop(name) for name in gone]
        for name in gone:
            self._configs.pop(name, None)
        await asyncio.gather(*(c.stop() for c in stopping))
        for name, config in wanted.items():
            if name not in self._connections:
                connection = self._connection(config)
                self._connections[name] = connection
                self._launch(connection)
        self._changed(None)

    async def restart(self, name: str) -> bool:
        """Stop and start one server again; False when there is no such server."""
        connection = self._connections.get(name)
        if connection is None:
            return False
        await connection.stop()
        fresh = self._connection(self._configs.get(name, connection.config))
        self._connections[name] = fresh
        self._launch(fresh)
        self._changed(fresh)
        return True

    async def close(self) -> None:
        self._closed = True
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    # --- approval of workspace files (approval.py) ------------------------------------------

    def awaiting_approval(self) -> PendingApproval | None:
        """The workspace file content whose servers wait for the user (not asked yet or
        asked and not answered), or None."""
        held = [
            config
            for name, config in sorted(self._configs.items())
            if not self._may_start(config)
            and config.digest not in self._answers.declined
            and name in self._connections
        ]
        before = self._approvals.approved() if self._approvals is not None else None
        return pending_approval(held, before)

    async def approve(self, digest: str, *, remember: bool) -> None:
        """Start the servers of that content: for this session, or (`remember`) for good."""
        self._answers = self._answers.approve(digest)
        if remember and self._approvals is not None:
            self._approvals.remember(digest)
        await self._replace_held(digest)

    async def decline(self, digest: str) -> None:
        """Leave the servers of that content off for this session (not asked again)."""
        self._answers = self._answers.decline(digest)
        await self._replace_held(digest)

    async def _replace_held(self, digest: str) -> None:
        for name, config in list(self._configs.items()):
            if config.digest != digest or name not in self._connections:
                continue
            old = self._connections[name]
            await old.stop()
            fresh = self._connection(config)
            self._connections[name] = fresh
            self._launch(fresh)
        self._changed(None)

    def _may_start(self, config: McpServerConfig) -> bool:
        if config.digest is None or self._approvals is None:
            return True
        return (
            config.digest in self._answers.approved
            or config.digest == self._approvals.approved()
        )

    @property
    def answers(self) -> McpFileAnswers:
        """What the user answered about workspace file contents in this session."""
        return self._answers

    # --- what the session asks -------------------------------------------------------------

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._connections))

    def connection(self, name: str) -> McpConnection | None:
        return self._connections.get(name)

    def listings(self) -> Mapping[str, tuple[ServerTool, ...]]:
        """The tools of every ready server, by server name."""
        return {
            name: connection.tools
            for name, connection in self._connections.items()
            if connection.state == "ready"
        }

    def trusted(self, server: str, tool: str) -> bool:
        connection = self._connections.get(server)
        if connection is None:
            return False
        return connection.config.trusted or tool in connection.config.auto_approve

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(
            sorted({s for c in self._connections.values() for s in c.config.secrets})
        )

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any]
    ) -> mcp_types.CallToolResult:
        """Raises McpUnavailableError (the server is gone, failed or starting), MCPError or
        TimeoutError."""
        connection = self._connections.get(server)
        if connection is None:
            raise McpUnavailableError(
                f"The MCP server {server!r} is no longer configured for this session."
            )
        if connection.state == "starting":  # e.g. right after a reload: it has its deadline
            self.start()
            await connection.wait_settled()
        timeout = connection.config.timeout or self._tool_timeout
        return await connection.call(tool, arguments, timeout)

    def status(self) -> tuple[ServerStatus, ...]:
        return tuple(
            ServerStatus(
                name=c.name,
                state=c.state,
                transport=c.config.transport,
                target=c.config.display,
                tools=tuple(tool.name for tool in c.tools),
                trusted=c.config.trusted,
                source=c.config.source,
                error=c.error,
                stderr_tail=c.stderr_tail() if c.state == "failed" else "",
            )
            for c in (self._connections[name] for name in self.names)
        )

    # --- internals --------------------------------------------------------------------------

    def _connection(self, config: McpServerConfig) -> McpConnection:
        from agent_server.agent.mcp.connection import McpConnection

        self._configs[config.name] = config
        if not self._may_start(config):  # shown as not started, with why; never started
            config = replace(config, error=held_reason(config.digest in self._answers.declined))
        limit = {} if self._max_result_bytes is None else {"max_message": self._max_result_bytes}
        return McpConnection(
            config,
            stderr_path=self._state_dir / f"mcp-{_file_safe(config.name)}.stderr.log",
            startup_timeout=self._startup_timeout,
            on_change=self._changed,
            root=self._root,
            mode=self._mode,
            **limit,
        )

    def _changed(self, connection: McpConnection | None) -> None:
        if connection is not None and self._connections.get(connection.name) is not connection:
            return  # a connection being replaced
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("MCP listener failed")


def _file_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80]
