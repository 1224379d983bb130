from __future__ import annotations

import dataclasses

import pytest

from agent_server.agent.tools.base import ToolContext
from agent_server.agent.tools.compact import CompactTool
from agent_server.context.trigger import BREAK_DETAIL, COMPACTION_REQUEST_DETAIL


@pytest.mark.parametrize(
    ("share", "requested", "says"),
    [
        (0.72, True, "will be compacted before your next step (the context is at 72%"),
        (0.5, False, "Not compacted: the context is at 50% of the compaction threshold"),
        (0.1, False, "a compaction pays only past 50%"),
        (None, False, "automatic compaction is off"),
    ],
)
async def test_the_request_is_kept_only_when_a_compaction_pays(
    ctx: ToolContext, share: float | None, requested: bool, says: str
) -> None:
    asked = dataclasses.replace(ctx, context_share=lambda: share)
    result = await CompactTool().run({"focus": " the failing tests "}, asked)
    assert says in result.text and not result.is_error
    details = result.details or {}
    assert details[BREAK_DETAIL] is True  # the model says it is at a break either way
    assert (COMPACTION_REQUEST_DETAIL in details) == requested
    if requested:
        assert details[COMPACTION_REQUEST_DETAIL] == {"focus": "the failing tests"}
