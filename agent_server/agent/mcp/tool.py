"""An MCP server's tool as one of the session's tools.

The spec is the one the tool list in force recorded (never re-read from the server, so the
prefix cannot change under the session). A call goes to the server by its own tool name;
what comes back is made into a tool result like any other: text bounded by the output limits
(the full text spilled to a file), images of the types the providers take passed on, audio,
links and binary resources described in a line. A server that is down, gone or slow gives an
error result that says so; nothing is retried behind the model's back.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp import MCPError

from agent_server.agent.mcp.servers import McpServers, McpUnavailableError
from agent_server.agent.mcp.stdio import give_back_memory
from agent_server.agent.tools.base import ToolContext, ToolKind, ToolResult, display_arg
from agent_server.agent.tools.output import bound_output
from agent_server.llm.messages import IMAGE_TYPES, ImageContent, TextContent, ToolSpec

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # Anthropic's limit for one image
MAX_IMAGES = 8


@dataclass(frozen=True, slots=True)
class McpTool:
    """Satisfies the `Tool` protocol. `read_only` is the server's trust: a trusted server's
    tools run without asking in the default permission mode, like the read tools."""

    spec: ToolSpec
    server: str
    tool: str
    servers: McpServers
    read_only: bool = False
    read_hint: bool = False

    @property
    def kind(self) -> ToolKind:
        return "read" if self.read_hint else "other"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        first = next(iter(arguments), None) if isinstance(arguments, Mapping) else None
        shown = display_arg(arguments, first) if isinstance(first, str) else ""
        return f"{self.server}: {self.tool}" + (f" {shown}" if shown else "")

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        details: dict[str, Any] = {"mcpServer": self.server, "mcpTool": self.tool}
        try:
            result = await self.servers.call(self.server, self.tool, dict(arguments))
        except McpUnavailableError as unavailable:
            return ToolResult.error(
                f"{unavailable} {self.spec.name} cannot run now. Do not retry it unless the "
                "user says the server is back; carry on without it or ask the user.",
                details,
            )
        except MCPError as error:
            if error.error.code == mcp_types.REQUEST_TIMEOUT:
                return ToolResult.error(
                    f"The MCP server {self.server!r} did not answer {self.tool} in time (the "
                    "server's 'timeout', or the mcp.toolTimeout setting).",
                    details,
                )
            connection = self.servers.connection(self.server)
            if connection is not None and connection.error:
                details["stderrTail"] = connection.stderr_tail()
            return ToolResult.error(
                f"The MCP server {self.server!r} failed the call: {error.error.message}", details
            )
        converted = tool_result(result, ctx, self.spec.name, details)
        if converted.details and converted.details.get("fullOutputPath"):
            del result  # a large result was spilled: give its memory back now
            give_back_memory()
        return converted


def tool_result(
    result: mcp_types.CallToolResult, ctx: ToolContext, tool_name: str, details: dict[str, Any]
) -> ToolResult:
    """An MCP result as a tool result (see the module docstring)."""
    texts: list[str] = []
    images: list[ImageContent] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            problem = _image_problem(block, len(images))
            if problem is None:
                images.append(ImageContent(block.data, block.mime_type))
            else:
                texts.append(problem)
        elif isinstance(block, mcp_types.AudioContent):
            size = _decoded_size(block.data)
            texts.append(f"[audio ({block.mime_type}, {size} bytes) not shown]")
        elif isinstance(block, mcp_types.ResourceLink):
            name = f" ({block.name})" if block.name else ""
            texts.append(f"[resource link: {block.uri}{name}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                texts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                texts.append(
                    f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'}, "
                    f"{_decoded_size(resource.blob)} bytes) not shown]"
                )
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(texts)
    if not text and not images:
        text = "(the tool returned nothing)"
    bounded = bound_output(
        text,
        spill_dir=ctx.spill_dir,
        tool_name=_file_name(tool_name),
        secrets=ctx.secrets,
        limits=ctx.limits,
    )
    content: list[TextContent | ImageContent] = [TextContent(bounded.text)] if text else []
    content.extend(images)
    return ToolResult(
        tuple(content), is_error=bool(result.is_error), details={**details, **bounded.details()}
    )


def _image_problem(block: mcp_types.ImageContent, count: int) -> str | None:
    if block.mime_type not in IMAGE_TYPES:
        return f"[image of type {block.mime_type} not shown: only png, jpeg, gif and webp are]"
    if count >= MAX_IMAGES:
        return f"[image not shown: at most {MAX_IMAGES} images per tool result]"
    size = _decoded_size(block.data)
    if size < 0:
        return "[image not shown: its data is not valid base64]"
    if size > MAX_IMAGE_BYTES:
        return f"[image not shown: {size} bytes, over the {MAX_IMAGE_BYTES >> 20} MB limit]"
    return None


def _decoded_size(data: str) -> int:
    """Bytes of base64 `data`; -1 when it is not base64."""
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return -1


def _file_name(tool_name: str) -> str:
    return tool_name.replace("/", "_")[:60]
