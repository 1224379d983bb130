"""The tool list in force for one session, and the MCP servers behind it.

The list is fixed when the session's first request is built (after the servers had their
chance to start: the `mcp.firstRequestWait` setting's seconds at most, 5 unless set: most
start in a second or two, npx included once its cache is warm; a slow or hanging server
does not hold the first prompt; one ready later is a change of the list, offered to the user
as any other) and recorded in the ledger; a reloaded
session sends the recorded list, byte for byte, whatever its servers do. From then on the
list changes only when the user accepts a change (the next request then re-reads the whole
prefix: the tools come first in it), or at the next compaction after a change appeared.

The candidate list is what the list would be now: the built-in tools, then every configured
server's tools: as the server lists them when it is ready, else as in force (a server that
crashed or is still starting does not lose its tools; a call to one answers with an error).
A server that is no longer configured drops out of the candidate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_server.agent.mcp.servers import McpServers, ServerStatus
from agent_server.agent.mcp.tool_list import (
    ServerTool,
    ToolList,
    ToolListChange,
    build_tool_list,
    compare,
)
from agent_server.agent.tools.base import Tool
from agent_server.llm.messages import ToolCall, ToolSpec
from agent_server.session.entries import ToolListEntry, ToolListReason
from agent_server.session.ledger import Ledger

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class PendingTools:
    """A change of the tool list waiting for the user: the names the model would see, and
    the tokens the next request would read again without the cache if it is accepted."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    tokens: int

    def to_json(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "tokens": self.tokens,
        }

    def describe(self, accept: str = "you accept the change") -> str:
        """The notice about the change; `accept` says how the user takes it in."""
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("changed", self.changed),
            )
            if names
        ]
        what = "; ".join(parts) if parts else "reordered"
        return (
            f"The MCP tools changed ({what}). Requests keep the current tool list until "
            f"{accept}: the next request then re-reads about {self.tokens} tokens "
            "without the prompt cache. The next compaction takes the change in anyway."
        )


@dataclass(frozen=True, slots=True)
class McpStatus:
    servers: tuple[ServerStatus, ...]
    pending: PendingTools | None
    tools_in_force: int  # 0 before the session's first request fixes the list

    def to_json(self) -> dict[str, Any]:
        return {
            "servers": [server.to_json() for server in self.servers],
            "toolsChange": self.pending.to_json() if self.pending is not None else None,
            "toolCount": self.tools_in_force,
        }


@dataclass(frozen=True, slots=True)
class AcceptOutcome:
    accepted: bool  # False: there was no change to accept
    deferred: bool  # a turn is running: the change applies from its next request
    tokens: int


class SessionTools:
    def __init__(
        self,
        *,
        ledger: Ledger,
        builtin: Sequence[Tool],
        servers: McpServers,
        estimate: Callable[[tuple[ToolSpec, ...]], int],
        on_status: Callable[[McpStatus], None],
        on_notice: Callable[[str], None],
        first_wait: Callable[[], float],
        busy: Callable[[], bool],
    ) -> None:
        self._ledger = ledger
        self._busy = busy  # a turn (or another change) is running: an accepted change waits
        self._first_wait = first_wait  # the seconds the first request waits for servers
        self._builtin = tuple(builtin)
        self._servers = servers
        self._estimate = estimate
        self._on_status = on_status
        self._on_notice = on_notice
        recorded = ledger.facts.tool_list()
        self._in_force: ToolList | None = ToolList.of_entry(recorded) if recorded else None
        self._accept_requested = False
        self._noticed: ToolListChange | None = None
        self._runnable: tuple[Tool, ...] | None = None
        servers.on_change(self._servers_changed)

    @property
    def servers(self) -> McpServers:
        return self._servers

    @property
    def fixed(self) -> bool:
        return self._in_force is not None

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the next request sends (the candidate until the list is fixed)."""
        return (self._in_force or self.candidate()).specs

    def runnable(self) -> tuple[Tool, ...]:
        """The tools calls can reach: one per name of the list in force."""
        if self._runnable is None:
            self._runnable = self._make_runnable(self._in_force or self.candidate())
        return self._runnable

    def files_of(self, call: ToolCall) -> tuple[str, tuple[str, ...]]:
        """The kind of a tool call's tool and the files the call reads or writes, as its
        tool says."""
        tool = next((tool for tool in self.runnable() if tool.spec.name == call.name), None)
        return (tool.kind, tool.paths(call.arguments)) if tool is not None else ("other", ())

    def paths_of(self, call: ToolCall) -> tuple[str, ...]:
        return self.files_of(call)[1]

    def candidate(self) -> ToolList:
        builtin = tuple(tool.spec for tool in self._builtin)
        listings: dict[str, Sequence[ServerTool]] = dict(self._servers.listings())
        if self._in_force is not None:
            by_name = {spec.name: spec for spec in self._in_force.specs}
            for name in self._servers.names:
                if name in listings:
                    continue
                listings[name] = [
                    ServerTool(
                        source.tool,
                        by_name[source.name].description,
                        by_name[source.name].parameters,
                        read_only_hint=source.read_only_hint,
                    )
                    for source in self._in_force.server_tools(name)
                ]
        return build_tool_list(builtin, listings)

    def pending(self) -> ToolListChange | None:
        if self._in_force is None:
            return None
        change = compare(self._in_force, self.candidate())
        return None if change.empty else change

    def status(self) -> McpStatus:
        change = self.pending()
        pending = None
        if change is not None:
            pending = PendingTools(
                change.added, change.removed, change.changed, self._estimate(self.candidate().specs)
            )
        return McpStatus(
            self._servers.status(),
            pending,
            len(self._in_force.specs) if self._in_force is not None else 0,
        )

    async def for_request(self) -> ToolList:
        """The list the next request sends: fixed now if it was not yet (the servers get
        their startup time first), or the accepted change taken in."""
        if self._in_force is None:
            # A server still starting then goes on starting (its own startup timeout).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._first_wait()):
                    await self._servers.wait_settled()
            self._adopt("start")
        elif self._accept_requested:
            self._adopt("accepted")
        assert self._in_force is not None
        return self._in_force

    def after_compaction(self) -> None:
        """A compaction rebuilt the prefix: a waiting change comes in with it."""
        if self.pending() is not None:
            self._adopt("compaction")

    def accept(self) -> AcceptOutcome:
        """Take in the waiting change (the next request re-reads the prefix); during a turn,
        from its next request."""
        change = self.pending()
        if change is None:
            return AcceptOutcome(False, False, 0)
        tokens = self._estimate(self.candidate().specs)
        if self._busy():
            self._accept_requested = True
            return AcceptOutcome(True, True, tokens)
        self._adopt("accepted")
        return AcceptOutcome(True, False, tokens)

    # --- internals --------------------------------------------------------------------------

    def _adopt(self, reason: ToolListReason) -> None:
        candidate = self.candidate()
        self._accept_requested = False
        if self._in_force is None or candidate != self._in_force:
            self._ledger.add(ToolListEntry, candidate.specs, candidate.mcp, reason)
        self._in_force = candidate
        self._runnable = None
        self._noticed = None
        self._publish()

    def _servers_changed(self) -> None:
        if self._ledger.closed:
            return  # the session is closed: its servers stopping is not news (nor readable)
        if self._in_force is None:
            self._runnable = None  # the candidate moved
        self._publish()
        change = self.pending()
        if change is not None and change != self._noticed:
            self._noticed = change
            status = self.status()
            if status.pending is not None:
                self._on_notice(status.pending.describe())

    def _publish(self) -> None:
        try:
            self._on_status(self.status())
        except Exception:
            log.exception("MCP status listener failed")

    def _make_runnable(self, tools: ToolList) -> tuple[Tool, ...]:
        builtin = {tool.spec.name: tool for tool in self._builtin}
        out: list[Tool] = []
        for spec in tools.specs:
            source = tools.source(spec.name)
            if source is None:
                if spec.name in builtin:
                    out.append(builtin[spec.name])
                continue
            from agent_server.agent.mcp.tool import McpTool  # loads the SDK

            out.append(
                McpTool(
                    spec,
                    source.server,
                    source.tool,
                    self._servers,
                    read_only=self._servers.trusted(source.server, source.tool),
                    read_hint=source.read_only_hint,
                )
            )
        return tuple(out)
