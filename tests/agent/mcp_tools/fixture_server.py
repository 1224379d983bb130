"""An MCP server written with the official Python SDK, for the tests.

Run as `python fixture_server.py [--slow SECONDS] [--fail] [--name NAME] [--linger SECONDS]
[--pid-file PATH] [--odd-schemas]`
(`--linger`: stays that long after its input ends, as a server slow to exit; `--odd-schemas`:
`shout` declares a schema that is not JSON Schema, `big` one with `anyOf` at its top level,
as servers in the wild do). Its tools:
shout (upper-cases text), grow (adds the tool `extra` and says the tool list changed),
picture (a 1x1 PNG with a caption; marked read-only), big (a text of `lines` lines), env (whether an
environment variable is set, and its length), crash (exits at once, after a line on stderr).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201b0a4d5b30000000049454e44ae426082"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--name", default="fixture")
    parser.add_argument("--linger", type=float, default=0.0)
    parser.add_argument("--pid-file")
    parser.add_argument("--odd-schemas", action="store_true")
    options = parser.parse_args()
    print(f"{options.name}: starting", file=sys.stderr, flush=True)
    if options.pid_file:
        with open(options.pid_file, "w", encoding="ascii") as pid_file:
            pid_file.write(str(os.getpid()))
    if options.fail:
        print(f"{options.name}: cannot open the database: bad credentials", file=sys.stderr,
              flush=True)
        sys.exit(2)
    if options.slow:
        time.sleep(options.slow)
    server = MCPServer(options.name)

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    def extra(n: int) -> int:
        """Double a number (a tool that appears later)."""
        return n * 2

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool 'extra' and tell the client the tool list changed."""
        server.add_tool(extra)
        await ctx.notify_tools_changed()  # 2026-07-28: to subscriptions/listen
        try:  # the handshake era: a plain notification
            await ctx.request_context.session.send_tool_list_changed()
        except Exception as error:
            print(f"no legacy notification: {error!r}", file=sys.stderr, flush=True)
        return "grown"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def picture() -> CallToolResult:
        """A one-pixel picture with a caption."""
        data = base64.b64encode(PNG).decode("ascii")
        return CallToolResult(
            content=[
                TextContent(text="one red pixel:"),
                ImageContent(data=data, mime_type="image/png"),
            ]
        )

    @server.tool()
    def big(lines: int) -> str:
        """A text of that many numbered lines."""
        return "\n".join(f"line {i}" for i in range(1, lines + 1))

    @server.tool()
    def env(name: str) -> str:
        """Whether an environment variable is set in the server, and its length."""
        value = os.environ.get(name)
        return "unset" if value is None else f"set, {len(value)} characters: {value}"

    @server.tool()
    def crash() -> str:
        """Exit the server process at once."""
        print(f"{options.name}: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)

    if options.odd_schemas:
        declared = {tool.name: tool for tool in server._tool_manager.list_tools()}
        declared["shout"].parameters = {
            "type": "object", "properties": {"text": {"type": "strnig"}}, "required": ["text"]
        }
        declared["big"].parameters = {
            "type": "object", "properties": {"lines": {"type": "integer"}},
            "anyOf": [{"required": ["lines"]}],
        }
    server.run()
    time.sleep(options.linger)


if __name__ == "__main__":
    main()
