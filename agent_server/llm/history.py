"""The message history as every provider sends it: the structural clean-up shared by all
provider APIs, and the one canonical JSON text of tool arguments.

Everything here is a pure function of the message list, so a history that only grows gives
requests that only grow: request N+1 begins with request N, byte for byte.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from agent_server.llm.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    canonical_arguments,
)

logger = logging.getLogger(__name__)

# What a tool call that never got a result is answered with, so that no request carries a
# tool call without its result (every provider rejects that).
MISSING_RESULT_TEXT = "No result provided: the tool call was interrupted."


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """The canonical JSON text of tool arguments: keys sorted at every depth, no spaces.

    Whatever key order a model streamed its arguments in, the same arguments always give the
    same bytes.
    """
    return json.dumps(
        canonical_arguments(arguments), ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )


def prepare_history(messages: Sequence[Message]) -> list[Message]:
    """The messages a provider request is built from.

    - Assistant messages that failed (`error`) are left out. An interrupted one (`aborted`)
      stays, with what arrived before the interruption (its unsigned thinking is dropped by
      the provider), so the model knows what it had said when the user stopped it, and the
      next request still begins with this one.
    - A tool result whose call is not in the assistant message just before it is left out
      (an orphan would be rejected; the context layer never produces one).
    - A tool call without a result gets a synthetic error result, placed after the results
      that did arrive.
    """
    out: list[Message] = []
    pending: dict[str, str] = {}  # call id -> tool name, of the last kept assistant message
    answered: set[str] = set()

    def close_pending() -> None:
        for call_id, name in pending.items():
            if call_id not in answered:
                out.append(
                    ToolResultMessage(
                        tool_call_id=call_id,
                        tool_name=name,
                        content=(TextContent(MISSING_RESULT_TEXT),),
                        is_error=True,
                    )
                )
        pending.clear()
        answered.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            if message.tool_call_id in pending and message.tool_call_id not in answered:
                answered.add(message.tool_call_id)
                out.append(message)
            else:
                logger.warning(
                    "leaving out a tool result without its tool call (id %s)", message.tool_call_id
                )
            continue
        close_pending()
        if isinstance(message, AssistantMessage):
            if message.stop_reason == "error":
                continue
            if not message.content:
                continue
            pending.update((call.id, call.name) for call in message.tool_calls)
        out.append(message)
    close_pending()
    return out
