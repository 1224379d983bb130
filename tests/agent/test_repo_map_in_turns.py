"""The repo_map tool in a real session: offered when the setting asks for it, called by the
simulated model before it explores, appended (the cached prefix holds), and sparing the
search the map answers."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.settings import AgentSettings, ToolOptions
from agent_server.repo_map import available
from tests.agent.conftest import agent_run
from tests.repo_map.fixture import write_shop

pytestmark = pytest.mark.skipif(not available(), reason="the repomap extra is not installed")

SCENARIO: dict[str, Any] = {
    "name": "map",
    "turns": [
        {"user": "Where is compute_tax defined? Read it.", "steps": [
            {"tools": [{"name": "grep", "arguments": {"pattern": "def compute_tax",
                                                      "path": "shop"}}],
             "finds": [{"path": "shop/tax.py", "text": "def compute_tax(amount, region):",
                        "line": 4}]},
            {"tools": [{"name": "read", "arguments": {"path": "shop/tax.py", "offset": 4,
                                                      "limit": 3}}]},
            {"text": "It rounds the amount times the region's rate."},
        ]},
        {"user": "And final_price?", "steps": [
            {"tools": [{"name": "grep", "arguments": {"pattern": "def final_price",
                                                      "path": "shop"}}],
             "finds": [{"path": "shop/pricing.py", "text": "def final_price(", "line": 10}]},
            {"text": "It applies the discount, then the tax."},
        ]},
    ],
}


def tool_names(request: Any) -> list[str]:
    return [tool["name"] for tool in request.request["tools"]]


@pytest.mark.parametrize("offered", [True, False])
async def test_the_map_spares_the_searches_it_answers(tmp_path: Path, offered: bool) -> None:
    settings = AgentSettings(permissions_mode="allowAll",
                             tools=ToolOptions(repo_map=offered))
    async with agent_run(tmp_path, scenario=SCENARIO, settings=settings,
                         sample_workspace=False) as run:
        write_shop(run.workspace)
        for prompt in ("Where is compute_tax defined? Read it.", "And final_price?"):
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn"
        requests = run.model_requests
        sources = [r.source for r in requests]
        assert ("repo_map" in tool_names(requests[0])) == offered
        if offered:
            # One map, before the first search; both searches skipped (the map shows both
            # definitions with their lines), the read made.
            assert sources == ["explore:0:0", "scenario:0:1", "scenario:0:2", "scenario:1:1"]
            assert [r.skipped for r in requests] == [(), ("0:0",), (), ("1:0",)]
        else:
            assert sources == ["scenario:0:0", "scenario:0:1", "scenario:0:2",
                               "scenario:1:0", "scenario:1:1"]
        # Appended like any result: each request begins with the one before it, and reads
        # it from the cache.
        assert all(r.tokens.cache_read > 0 for r in requests[1:])
        for before, after in pairwise(requests):
            sent = plain(before.request["messages"])
            assert plain(after.request["messages"])[:len(sent)] == sent


def plain(value: Any) -> Any:
    """`value` without its cache marks (the breakpoints move from one request to the next)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
