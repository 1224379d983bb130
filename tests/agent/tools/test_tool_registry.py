"""The tool set: fixed order, fixed specs (part of the cached prefix), tolerant titles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_server.agent.tools import (
    ToolContext,
    default_tools,
    find_tool,
    tool_specs,
    unknown_tool_result,
)


def specs_json() -> str:
    return json.dumps(
        [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in tool_specs(default_tools())
        ],
        sort_keys=False,
    )


def test_default_tools_in_fixed_order() -> None:
    assert [t.spec.name for t in default_tools()] == [
        "read",
        "write",
        "edit",
        "ls",
        "find",
        "grep",
        "bash",
        "plan",
        "remember",
        "recall",
        "compact",
    ]


def test_specs_are_byte_identical_and_free_of_session_facts(
    ctx: ToolContext, workspace: Path
) -> None:
    first = specs_json()
    assert specs_json() == first
    assert str(workspace) not in first
    assert str(Path.home()) not in first or str(Path.home()) == "/"


def test_read_only_flags_and_kinds() -> None:
    flags = {t.spec.name: (t.read_only, t.kind) for t in default_tools()}
    assert flags == {
        "read": (True, "read"),
        "write": (False, "edit"),
        "edit": (False, "edit"),
        "ls": (True, "read"),
        "find": (True, "search"),
        "grep": (True, "search"),
        "bash": (False, "execute"),
        "plan": (True, "other"),
        "remember": (True, "other"),
        "recall": (True, "search"),
        "compact": (True, "other"),
    }


def test_schemas_are_objects_with_described_properties() -> None:
    for spec in tool_specs(default_tools()):
        assert spec.parameters["type"] == "object"
        for name in spec.parameters["required"]:
            assert name in spec.parameters["properties"]
        for schema in spec.parameters["properties"].values():
            assert schema["description"]


def test_argument_names_are_the_ones_the_scenarios_use() -> None:
    names = {t.spec.name: set(t.spec.parameters["properties"]) for t in default_tools()}
    assert names == {
        "read": {"path", "offset", "limit"},
        "write": {"path", "content"},
        "edit": {"path", "oldText", "newText"},
        "ls": {"path"},
        "find": {"pattern", "path"},
        "grep": {"pattern", "path", "glob", "ignoreCase", "context"},
        "bash": {"command", "timeout", "outsideSandbox"},
        "plan": {"entries"},
        "remember": {"text", "kind"},
        "recall": {"query", "entry", "offset", "in"},
        "compact": {"focus"},
    }


@pytest.mark.parametrize("arguments", [{}, {"path": 3, "command": None, "pattern": ["x"]}])
def test_titles_and_paths_never_raise(arguments: dict[str, object]) -> None:
    for tool in default_tools():
        assert tool.title(arguments)
        assert tool.paths(arguments) == ()


def test_titles_and_paths() -> None:
    tools = {t.spec.name: t for t in default_tools()}
    assert tools["edit"].title({"path": "src/app.py"}) == "Edit src/app.py"
    assert tools["write"].title({"path": "notes.md"}) == "Write notes.md"
    assert tools["read"].title({"path": "a.py"}) == "Read a.py"
    assert tools["grep"].title({"pattern": "TODO", "path": "src"}) == "Grep TODO in src"
    assert tools["find"].title({"pattern": "*.py"}) == "Find *.py"
    assert tools["ls"].title({}) == "List ."
    assert tools["edit"].paths({"path": "src/app.py"}) == ("src/app.py",)
    assert tools["read"].paths({"path": "a.py"}) == ("a.py",)
    assert tools["bash"].paths({"command": "cat a.py"}) == ()


def test_lookup_and_unknown_tool() -> None:
    tools = default_tools()
    found = find_tool(tools, "grep")
    assert found is not None
    assert found.spec.name == "grep"
    assert find_tool(tools, "Grep") is None
    result = unknown_tool_result("search_web", tools)
    assert result.is_error
    assert "read, write, edit, ls, find, grep, bash, plan, remember, recall, compact" in result.text
