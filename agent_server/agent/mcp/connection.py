"""One MCP server for one session, through the official SDK (`mcp` on PyPI).

A connection owns one task that holds the SDK's `Client` open from start to stop (anyio's
scopes must be entered and left in one task): it starts the server (a subprocess over stdio,
or a streamable HTTP / SSE endpoint), lists its tools, and then waits, re-listing whenever
the server says its tools changed (`notifications/tools/list_changed` on the handshake-era
protocol, a `subscriptions/listen` event on 2026-07-28). Tool calls come from the turn's
tasks and go through the same client.

States: starting -> ready, or failed (could not start in time, crashed, closed the
connection; with the reason and the tail of its stderr), or stopped (the session closed it).
A failure never reaches the session as an exception: the session sees the state.

The SDK (about 0.6 s of imports) is loaded by the connection's task, on a thread
(`_load_sdk`): making connections, which a session does when it is created, imports none of
it, so an editor's `session/new` with MCP servers is answered at once and the servers start
behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from agent_server import __version__
from agent_server.agent.mcp.config import McpServerConfig, scrub
from agent_server.agent.mcp.servers import ConnectMode, McpUnavailableError, ServerState
from agent_server.agent.mcp.tool_list import ServerTool
from agent_server.agent.tools.output import printable

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.client import ClientRequestContext, Transport

log = logging.getLogger(__name__)

STDERR_TAIL_LINES = 20
_STDERR_TAIL_BYTES = 8192
_MAX_PAGES = 100
_HTTP_CONNECT_TIMEOUT, _HTTP_READ_TIMEOUT = 30.0, 300.0
_CANCEL_GRACE = 1.0  # seconds a start cancelled at its deadline has to end


def _load_sdk() -> None:
    """Import what a connection's task uses of the SDK (for a thread: see the docstring)."""
    import httpx2  # noqa: F401
    import mcp.client.sse
    import mcp.client.streamable_http  # noqa: F401
    import mcp_types.version  # noqa: F401

    import agent_server.agent.mcp.stdio  # noqa: F401


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        stderr_path: Path,
        startup_timeout: float,
        on_change: Callable[[McpConnection], None],
        root: Path | None = None,
        mode: ConnectMode = "auto",
        max_message: int | None = None,
    ) -> None:
        """`max_message`: the most bytes one message from a stdio server may have (None:
        stdio.DEFAULT_MAX_MESSAGE)."""
        self.config = config
        self._max_message = max_message
        self.state: ServerState = "starting" if config.error is None else "failed"
        self.error: str | None = config.error
        self.tools: tuple[ServerTool, ...] = ()
        self.protocol_version: str | None = None
        self._stderr_path = stderr_path
        self._startup_timeout = startup_timeout
        self._on_change = on_change
        self._mode = mode
        self._root = root
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # stop requested, or the transport ended
        self._relist = asyncio.Event()
        self._settled = asyncio.Event()  # ready or failed or stopped
        self._stopping = False
        self._closed_by_server = False
        self._timed_out = False
        if config.error is not None:
            self._settled.set()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    def start(self) -> None:
        """Start the server in the background (once); `wait_settled` waits for the outcome."""
        if self._task is not None or self.config.error is not None:
            return
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        loop = asyncio.get_running_loop()
        loop.call_later(self._startup_timeout, self._startup_deadline)

    async def wait_settled(self) -> None:
        await self._settled.wait()

    async def stop(self) -> None:
        """Stop the server (its process tree is ended by the SDK); idempotent. A server
        still starting is cancelled at once: there is no session to end gracefully, and
        waiting for its answer held an editor's exit 10 s longer."""
        self._stopping = True
        self._wake.set()
        task = self._task
        if task is not None and not task.done():
            if self.state == "starting":
                task.cancel()
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), timeout=10)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.state != "failed":
            self._set_state("stopped")

    async def call(
        self, tool: str, arguments: dict[str, Any], seconds: float | None
    ) -> mcp_types.CallToolResult:
        """The server's answer; `seconds` bounds the wait (the SDK raises on expiry)."""
        client = self._client
        if self.state != "ready" or client is None:
            raise McpUnavailableError(self.unavailable_reason())
        return await client.call_tool(tool, arguments, read_timeout_seconds=seconds)

    def unavailable_reason(self) -> str:
        if self.state == "starting":
            return f"The MCP server {self.name!r} is still starting."
        if self.state == "stopped":
            return f"The MCP server {self.name!r} has been stopped."
        return f"The MCP server {self.name!r} is not running: {self.error or 'it failed'}."

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr, secrets scrubbed."""
        try:
            with self._stderr_path.open("rb") as file:
                file.seek(0, 2)
                size = file.tell()
                file.seek(max(0, size - _STDERR_TAIL_BYTES))
                data = file.read()
        except OSError:
            return ""
        lines = data.decode("utf-8", errors="replace").splitlines()[-STDERR_TAIL_LINES:]
        return printable(scrub("\n".join(lines), self.config.secrets))

    # --- the owner task ----------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._serve()
        except asyncio.CancelledError:
            if self._timed_out:
                self._timed_out_still_starting()
            elif not self._stopping:
                raise
        except BaseException as failure:  # anyio wraps task-group errors in groups
            if self._stopping:
                return
            self._fail(_describe_failure(failure, self.config))
        else:
            if self._closed_by_server and not self._stopping:
                self._fail("the server closed the connection (it exited or crashed)")
        finally:
            self._client = None

    async def _serve(self) -> None:
        await asyncio.to_thread(_load_sdk)
        import mcp_types
        from mcp import Client
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        async with contextlib.AsyncExitStack() as stack:
            transport = await self._transport(stack)
            client = Client(
                transport,
                mode=self._mode,
                message_handler=self._on_message,
                list_roots_callback=self._list_roots if self._root is not None else None,
                client_info=mcp_types.Implementation(name="agent-server", version=__version__),
            )
            await stack.enter_async_context(client)
            self.protocol_version = client.protocol_version
            self.tools = await _list_tools(client)
            self._client = client
            self._set_state("ready")
            async with anyio.create_task_group() as group:
                group.start_soon(self._relist_loop, client)
                capabilities = client.server_capabilities.tools
                if (
                    client.protocol_version in MODERN_PROTOCOL_VERSIONS
                    and capabilities is not None
                    and capabilities.list_changed
                ):
                    group.start_soon(self._listen, client)
                await self._wake.wait()
                group.cancel_scope.cancel()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Transport:
        import httpx2
        from mcp import StdioServerParameters
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client

        from agent_server.agent.mcp.stdio import bounded_stdio

        config = self.config
        if config.transport == "stdio":
            self._stderr_path.parent.mkdir(parents=True, exist_ok=True)
            errlog: TextIO = stack.enter_context(
                self._stderr_path.open("w", encoding="utf-8", errors="replace")
            )
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env),
                cwd=config.cwd,
            )
            limit = {} if self._max_message is None else {"max_message": self._max_message}
            return _watched(bounded_stdio(params, errlog, **limit), self._transport_ended)
        if config.transport == "sse":
            return _watched(
                sse_client(config.url, headers=dict(config.headers)), self._transport_ended
            )
        timeout = httpx2.Timeout(_HTTP_CONNECT_TIMEOUT, read=_HTTP_READ_TIMEOUT)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout)
        )
        return _watched(streamable_http_client(config.url, http_client=http), self._transport_ended)

    async def _list_roots(
        self, context: ClientRequestContext
    ) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        """The workspace, for servers that ask (the filesystem server confines itself to it)."""
        import mcp_types

        assert self._root is not None
        root = mcp_types.Root.model_validate({"uri": self._root.as_uri(), "name": self._root.name})
        return mcp_types.ListRootsResult(roots=[root])

    async def _on_message(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._relist.set()

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._relist.set()
        except Exception as error:  # no change events: the list stays as first read
            log.info("MCP server %s: no tools/list_changed subscription: %s", self.name, error)

    async def _relist_loop(self, client: Client) -> None:
        while True:
            await self._relist.wait()
            self._relist.clear()
            try:
                tools = await _list_tools(client)
            except Exception as error:
                log.warning("MCP server %s: re-listing its tools failed: %s", self.name, error)
                continue
            if tools != self.tools:
                self.tools = tools
                self._notify()

    def _transport_ended(self) -> None:
        if not self._stopping:
            self._closed_by_server = True
        self._wake.set()

    def _startup_deadline(self) -> None:
        if self.state == "starting" and self._task is not None and not self._task.done():
            self._timed_out = True
            self._task.cancel()
            # The task says so as it ends; one whose cancel the SDK's task groups hold up
            # (or that had not begun) is failed a moment later all the same, so that nothing
            # waits on a server past its deadline.
            asyncio.get_running_loop().call_later(_CANCEL_GRACE, self._timed_out_still_starting)

    def _timed_out_still_starting(self) -> None:
        if self.state == "starting":
            self._fail(
                f"did not start within {self._startup_timeout:g} s (the mcp.startupTimeout setting)"
            )

    def _fail(self, reason: str) -> None:
        self.error = scrub(reason, self.config.secrets)
        self._set_state("failed")

    def _set_state(self, state: ServerState) -> None:
        if state == self.state:
            return
        self.state = state
        if state != "starting":
            self._settled.set()
        self._notify()

    def _notify(self) -> None:
        try:
            self._on_change(self)
        except Exception:
            log.exception("MCP state listener failed")


async def _list_tools(client: Client) -> tuple[ServerTool, ...]:
    tools: list[ServerTool] = []
    cursor: str | None = None
    for _page in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        for tool in page.tools:
            annotations = tool.annotations
            tools.append(
                ServerTool(
                    name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema),
                    title=tool.title or (annotations.title if annotations else None),
                    read_only_hint=bool(annotations and annotations.read_only_hint),
                )
            )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(sorted(tools, key=lambda t: t.name))


def _describe_failure(failure: BaseException, config: McpServerConfig) -> str:
    leaf = _first_leaf(failure)
    if isinstance(leaf, FileNotFoundError) and config.transport == "stdio":
        return f"cannot run {config.command!r}: no such program (check 'command' and PATH)"
    if isinstance(leaf, PermissionError) and config.transport == "stdio":
        return f"cannot run {config.command!r}: permission denied"
    try:
        import httpx2
        from mcp import MCPError
    except ImportError:  # the SDK itself could not be loaded
        return f"{type(leaf).__name__}: {leaf}"
    if isinstance(leaf, MCPError):
        if "closed" in leaf.error.message.lower():
            return "the server closed the connection before it was ready (it exited or crashed)"
        return f"the server answered with an error: {leaf.error.message}"
    if isinstance(leaf, httpx2.HTTPStatusError):
        return f"{config.url} answered HTTP {leaf.response.status_code}"
    if isinstance(leaf, httpx2.TransportError):
        return f"cannot reach {config.url}: {leaf}"
    return f"{type(leaf).__name__}: {leaf}"


def _first_leaf(failure: BaseException) -> BaseException:
    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    return failure


@contextlib.asynccontextmanager
async def _watched(inner: Transport, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """`inner`, with its read stream telling `on_end` when the server side ends."""
    async with inner as (read, write):
        yield _WatchedReadStream(read, on_end), write


class _WatchedReadStream:
    """A transport's read stream that calls `on_end` once at end of stream."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end
        self._ended = False

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self._on_end()

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

