"""`run_tool`: the one way the agent runs a tool call.

It validates the arguments against the tool's schema, runs the tool, turns any failure into an
error result the model can read, and scrubs secrets from everything it returns. It never raises,
except CancelledError when the call is cancelled (bash has then killed its processes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from agent_server.agent.tools.base import Tool, ToolContext, ToolResult
from agent_server.agent.tools.output import printable
from agent_server.agent.tools.validation import validate_arguments
from agent_server.errors import ToolError, redact
from agent_server.llm.messages import ImageContent, TextContent
from agent_server.redaction import REDACTED, REDACTION_NOTE

logger = logging.getLogger(__name__)


async def run_tool(tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    name = tool.spec.name
    try:
        checked = validate_arguments(tool.spec, arguments)
        result = await tool.run(checked, ctx)
    except ToolError as exc:
        result = ToolResult.error(exc.message)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f": {exc.filename}" if exc.filename else ""
        result = ToolResult.error(f"{name} failed: {reason}{where}")
    except Exception as exc:  # a bug in a tool must not end the turn
        logger.exception("tool %s failed", name)
        result = ToolResult.error(f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")
    return scrub_result(result, ctx.secrets)


def scrub_result(result: ToolResult, secrets: tuple[str, ...]) -> ToolResult:
    """`result` with secrets (and anything shaped like an API key) replaced, in the text the
    model gets and in the details the editor gets."""
    content: list[TextContent | ImageContent] = [
        TextContent(printable(redact(block.text, *secrets)))
        if isinstance(block, TextContent)
        else block
        for block in result.content
    ]
    texts = [i for i, block in enumerate(content) if isinstance(block, TextContent)]
    if any(REDACTED in block.text for block in content if isinstance(block, TextContent)):
        # Say so: the model must not take [redacted] for the file's content (and write it back).
        last = content[texts[-1]]
        assert isinstance(last, TextContent)
        if REDACTION_NOTE not in last.text:
            content[texts[-1]] = TextContent(f"{last.text}\n\n{REDACTION_NOTE}")
    details = _scrub_value(result.details, secrets) if result.details is not None else None
    return ToolResult(tuple(content), result.is_error, details)


def _scrub_value(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return printable(redact(value, *secrets))
    if isinstance(value, Mapping):
        return {key: _scrub_value(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_value(item, secrets) for item in value]
    return value
