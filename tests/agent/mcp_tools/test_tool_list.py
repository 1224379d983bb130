"""The tool list: names the providers accept, one order whatever the servers do, and the
ledger record that makes a reload send the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agent_server.agent.mcp.tool_list import (
    NAME_PATTERN,
    ServerTool,
    ToolList,
    build_tool_list,
    compare,
)
from agent_server.agent.tools import default_tools
from agent_server.session.entries import TitleEntry, ToolListEntry, entry_from_json, entry_to_json
from agent_server.session.ledger import Ledger

BUILTIN = tuple(tool.spec for tool in default_tools())
names = st.text(min_size=1, max_size=80)
schemas = st.dictionaries(
    st.sampled_from(["type", "properties", "required", "description", "$schema"]),
    st.one_of(st.text(max_size=5), st.integers()),
    max_size=4,
)


def tool(name: str, schema: dict | None = None, description: str = "") -> ServerTool:
    return ServerTool(name, description, schema or {"type": "object", "properties": {}})


@given(st.dictionaries(names, st.lists(names, max_size=6, unique=True), max_size=5))
def test_names_always_match_the_provider_limits_and_never_collide(
    servers: dict[str, list[str]],
) -> None:
    listing = {server: [tool(name) for name in tools] for server, tools in servers.items()}
    built = build_tool_list(BUILTIN, listing)
    sent = [spec.name for spec in built.specs]
    assert all(NAME_PATTERN.match(name) for name in sent)
    assert len(set(sent)) == len(sent)
    assert sent[: len(BUILTIN)] == [spec.name for spec in BUILTIN]
    assert len(built.mcp) == sum(len(tools) for tools in servers.values())


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=10),
        st.lists(st.tuples(st.text(min_size=1, max_size=10), schemas), max_size=5,
                 unique_by=lambda t: t[0]),
        max_size=4,
    ),
    st.randoms(use_true_random=False),
)
def test_the_list_does_not_depend_on_listing_order_or_schema_key_order(servers, rng) -> None:
    def listing(shuffle: bool) -> dict[str, list[ServerTool]]:
        out = {}
        keys = list(servers)
        if shuffle:
            rng.shuffle(keys)
        for server in keys:
            tools = [tool(name, dict(reversed(list(s.items()))) if shuffle else s)
                     for name, s in servers[server]]
            if shuffle:
                rng.shuffle(tools)
            out[server] = tools
        return out

    first = build_tool_list(BUILTIN, listing(False))
    second = build_tool_list(BUILTIN, listing(True))
    assert json.dumps([s.parameters for s in first.specs]) == json.dumps(
        [s.parameters for s in second.specs]
    )
    assert first == second


def test_prefixed_names_sorted_by_server_then_tool() -> None:
    built = build_tool_list(
        BUILTIN,
        {
            "zeta": [tool("b"), tool("a")],
            "alpha": [tool("run.query"), tool("list tables")],
        },
    )
    assert [s.name for s in built.specs[len(BUILTIN):]] == [
        "mcp__alpha__list_tables", "mcp__alpha__run_query", "mcp__zeta__a", "mcp__zeta__b",
    ]
    assert built.source("mcp__alpha__run_query").tool == "run.query"


def test_long_and_colliding_names_get_a_stable_hash_suffix() -> None:
    long_server = "s" * 70
    built = build_tool_list(BUILTIN, {"a": [tool("x.y"), tool("x_y")], long_server: [tool("t")]})
    sent = [s.name for s in built.specs[len(BUILTIN):]]
    assert sent[0] == "mcp__a__x_y" and sent[1].startswith("mcp__a__x_y_") and len(sent[1]) <= 64
    assert len(sent[2]) == 64
    again = build_tool_list(BUILTIN, {"a": [tool("x.y"), tool("x_y")], long_server: [tool("t")]})
    assert [s.name for s in again.specs] == [s.name for s in built.specs]


def test_a_tool_named_like_a_builtin_cannot_shadow_it() -> None:
    built = build_tool_list(BUILTIN, {"x": [tool("read")]})
    assert [s.name for s in built.specs].count("read") == 1


def test_compare_names_what_changed() -> None:
    old = build_tool_list(BUILTIN, {"a": [tool("one"), tool("two")]})
    new = build_tool_list(
        BUILTIN, {"a": [tool("one", description="new words"), tool("three")]}
    )
    change = compare(old, new)
    assert change.added == ("mcp__a__three",)
    assert change.removed == ("mcp__a__two",)
    assert change.changed == ("mcp__a__one",)
    assert compare(old, old).empty


def test_the_ledger_record_round_trips_byte_for_byte(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "é ✓"}}}
    built = build_tool_list(BUILTIN, {"db": [tool("query", schema, "Run SQL.")]})
    ledger = Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace=str(tmp_path))
    stored = ledger.add(ToolListEntry, built.specs, built.mcp, "start")
    ledger.close()
    reopened = Ledger.open(tmp_path / "s.jsonl")
    entry = reopened.facts.tool_list()
    assert entry == stored
    assert json.dumps([s.parameters for s in ToolList.of_entry(entry).specs]) == json.dumps(
        [s.parameters for s in built.specs]
    )
    reopened.close()


def test_an_older_reader_keeps_the_entry_and_a_ledger_without_one_opens(tmp_path: Path) -> None:
    built = build_tool_list(BUILTIN, {"db": [tool("query")]})
    entry = ToolListEntry("e1", None, "2025-01-01T00:00:00.000Z", built.specs, built.mcp)
    data = entry_to_json(entry)
    assert data["type"] == "toolList" and data["mcp"][0] == {
        "name": "mcp__db__query", "server": "db", "tool": "query"
    }
    assert entry_from_json(data) == entry
    ledger = Ledger.create(tmp_path / "old.jsonl", session_id="old", workspace=str(tmp_path))
    ledger.add(TitleEntry, "no tool list here")
    ledger.close()
    reopened = Ledger.open(tmp_path / "old.jsonl")
    assert reopened.facts.tool_list() is None
    reopened.close()
