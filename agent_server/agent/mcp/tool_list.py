"""The tool list a session sends: built-in tools first, then each MCP server's tools.

The list is part of the cached prompt prefix (tools come first in it), so it is built to be
byte-stable: servers in name order, each server's tools in name order, each schema with its
keys sorted, and names made from the server and tool names by one deterministic rule:
`mcp__<server>__<tool>` (Claude Code's convention) with every character outside
`[A-Za-z0-9_-]` replaced by `_`, and, when that is longer than 64 characters (the Anthropic
and OpenAI limit) or taken already, cut and ended with a hash of the two names.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_server.llm.messages import ToolSpec
from agent_server.session.entries import McpToolSource, ToolListEntry

MAX_NAME = 64
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One tool as an MCP server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    title: str | None = None
    read_only_hint: bool = False


@dataclass(frozen=True, slots=True)
class ToolList:
    """What the requests send (`specs`, in order) and which of them are MCP tools."""

    specs: tuple[ToolSpec, ...]
    mcp: tuple[McpToolSource, ...] = ()

    def source(self, name: str) -> McpToolSource | None:
        return next((source for source in self.mcp if source.name == name), None)

    def server_tools(self, server: str) -> tuple[McpToolSource, ...]:
        return tuple(source for source in self.mcp if source.server == server)

    @staticmethod
    def of_entry(entry: ToolListEntry) -> ToolList:
        return ToolList(entry.tools, entry.mcp)


@dataclass(frozen=True, slots=True)
class ToolListChange:
    """How a candidate list differs from the one in force, by sent name."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    moved: bool  # same tools, another order

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.moved)


def build_tool_list(
    builtin: Sequence[ToolSpec], servers: Mapping[str, Sequence[ServerTool]]
) -> ToolList:
    """Built-in specs in their order, then the servers' tools (servers by name, tools by name)."""
    taken = {spec.name for spec in builtin}
    specs = list(builtin)
    sources: list[McpToolSource] = []
    for server in sorted(servers):
        for tool in sorted(servers[server], key=lambda t: t.name):
            name = tool_name(server, tool.name, taken)
            taken.add(name)
            specs.append(ToolSpec(name, describe(tool), canonical_schema(tool.input_schema)))
            sources.append(McpToolSource(name, server, tool.name, tool.read_only_hint))
    return ToolList(tuple(specs), tuple(sources))


def tool_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """The name the model sees for `tool` of `server` (see the module docstring)."""
    name = _UNSAFE.sub("_", f"mcp__{server}__{tool}")
    if len(name) <= MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()
    for length in range(8, len(digest) + 1):
        candidate = f"{name[: MAX_NAME - length - 1]}_{digest[:length]}"
        if candidate not in taken:
            return candidate
    raise ValueError(f"no free tool name for {server}/{tool}")  # 2**256 names taken


def describe(tool: ServerTool) -> str:
    """The description the model sees: the server's, else its title, else its name."""
    return (tool.description or tool.title or tool.name).strip()


def canonical_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with its keys sorted at every level (a server's key order is not a change),
    as the providers take it: `oneOf`, `anyOf` and `allOf` at its top level are left out
    (Anthropic refuses them there), and an empty, non-object or invalid schema (not JSON
    Schema draft 2020-12, which both APIs check) becomes `{"type": "object", "properties":
    {}}`: one tool's schema would otherwise make every request of the session refused."""
    fitted: dict[str, Any] = json.loads(
        _accepted_schema(json.dumps(schema, sort_keys=True, ensure_ascii=False))
    )
    return fitted


_EMPTY_SCHEMA = '{"properties": {}, "type": "object"}'
_TOP_LEVEL_REFUSED = ("allOf", "anyOf", "oneOf")


@functools.lru_cache(maxsize=1024)
def _accepted_schema(text: str) -> str:
    """`canonical_schema` on a schema's sorted JSON; its result as sorted JSON."""
    from jsonschema import Draft202012Validator  # with the MCP SDK: only MCP tools need it
    from jsonschema.exceptions import SchemaError

    data = json.loads(text)
    if not isinstance(data, dict) or data.get("type") != "object":
        return _EMPTY_SCHEMA
    for key in _TOP_LEVEL_REFUSED:
        data.pop(key, None)
    try:
        Draft202012Validator.check_schema(data)
    except SchemaError:
        return _EMPTY_SCHEMA
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def compare(in_force: ToolList, candidate: ToolList) -> ToolListChange:
    old = {spec.name: spec for spec in in_force.specs}
    new = {spec.name: spec for spec in candidate.specs}
    added = tuple(name for name in new if name not in old)
    removed = tuple(name for name in old if name not in new)
    changed = tuple(name for name in new if name in old and new[name] != old[name])
    kept_old = [name for name in old if name in new]
    kept_new = [name for name in new if name in old]
    return ToolListChange(added, removed, changed, kept_old != kept_new)
