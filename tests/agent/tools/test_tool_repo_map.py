"""The repo_map tool: the ranked map as a tool result, favouring the session's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext, default_tools, run_tool
from agent_server.agent.tools import repo_map as repo_map_tool
from agent_server.agent.tools.repo_map import RepoMapTool
from agent_server.context.estimate import estimate_text_tokens
from agent_server.repo_map import available
from tests.repo_map.fixture import FILES, write_shop

pytestmark = pytest.mark.skipif(not available(), reason="the repomap extra is not installed")
TOOL = RepoMapTool()


def test_offered_last_and_only_when_asked_for() -> None:
    names = [tool.spec.name for tool in default_tools(repo_map=True)]
    assert names[-1] == "repo_map"
    assert names[:-1] == [tool.spec.name for tool in default_tools()]
    assert (TOOL.read_only, TOOL.kind) == (True, "search")


async def test_the_session_files_steer_the_map(workspace: Path, spill_dir: Path) -> None:
    write_shop(workspace)
    small = {"tokens": 256}  # the whole shop fits the default budget
    plain = await run_tool(TOOL, small, ToolContext(workspace=workspace, spill_dir=spill_dir))
    steered = await run_tool(TOOL, small, ToolContext(
        workspace=workspace, spill_dir=spill_dir, session_files=("shop/reports.py",)))
    assert not plain.is_error and not steered.is_error
    assert plain.text != steered.text
    # What reports.py uses (compute_tax) is there, and reports.py itself is kept on the map.
    assert "def compute_tax(amount, region):" in steered.text
    assert "shop/reports.py:" in steered.text
    assert steered.details is not None and steered.details["sessionFiles"] == 1


async def test_lines_are_numbered_as_in_the_file(workspace: Path, ctx: ToolContext) -> None:
    write_shop(workspace)
    result = await run_tool(TOOL, {"focus": ["final_price"]}, ctx)
    line = next(line for line in result.text.splitlines() if "│def final_price(" in line)
    number, _, code = line.partition("│")
    assert FILES["shop/pricing.py"].splitlines()[int(number) - 1] == code


async def test_the_budget_is_kept(workspace: Path, ctx: ToolContext) -> None:
    write_shop(workspace)
    small = await run_tool(TOOL, {"tokens": 256}, ctx)
    large = await run_tool(TOOL, {"tokens": 2048}, ctx)
    assert estimate_text_tokens(small.text) <= 256
    assert len(small.text) < len(large.text)


async def test_focus_brings_a_name_forward(workspace: Path, ctx: ToolContext) -> None:
    write_shop(workspace)
    result = await run_tool(TOOL, {"focus": ["yearly_summary"], "tokens": 256}, ctx)
    assert "def yearly_summary(sales):" in result.text


@pytest.mark.parametrize(("arguments", "message"), [
    ({"tokens": 10}, "between 256 and 8192"),
    ({"focus": "compute_tax"}, "expected an array"),
    ({"focus": [1]}, "focus"),
])
async def test_bad_arguments_are_refused(workspace: Path, ctx: ToolContext,
                                         arguments: dict[str, object], message: str) -> None:
    write_shop(workspace)
    result = await run_tool(TOOL, arguments, ctx)
    assert result.is_error
    assert message in result.text


async def test_a_workspace_without_code(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "notes.md").write_text("# notes\n")
    result = await run_tool(TOOL, {}, ctx)
    assert not result.is_error
    assert "no source file" in result.text


async def test_secret_and_linked_files_stay_off_the_map(workspace: Path,
                                                        ctx: ToolContext) -> None:
    write_shop(workspace)
    (workspace / "service-account-prod.json").write_text('{"private_key": "x"}\n')
    linked = workspace / "shop" / "linked.py"
    (workspace / "outside.py").write_text("def hidden_elsewhere():\n    return 1\n")
    linked.hardlink_to(workspace / "outside.py")
    result = await run_tool(TOOL, {"tokens": 4096}, ctx)
    assert "service-account-prod.json" not in result.text
    assert "hidden_elsewhere" not in result.text


async def test_the_settings_budget_is_the_default(workspace: Path, spill_dir: Path) -> None:
    from agent_server.agent.settings import settings_from_json

    write_shop(workspace)
    settings = settings_from_json({"tools": {"repoMap": True, "repoMapTokens": 300}})
    assert settings.tools.repo_map and settings.tools.repo_map_tokens == 300
    small = await run_tool(TOOL, {}, ToolContext(workspace=workspace, spill_dir=spill_dir,
                                                 repo_map_tokens=300))
    assert estimate_text_tokens(small.text) <= 300


async def test_a_file_swapped_for_a_link_after_the_listing_is_not_read(
    workspace: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the map listed files without links, then read them by name: a command
    running in the background that swapped a listed file for a link (to a key or a file of
    the home directory, which the server can read) between the two put the outside file's
    definitions in the map sent to the provider."""
    write_shop(workspace)
    outside = workspace.parent / "outside.py"
    outside.write_text("def OUTSIDE_CANARY_FUNCTION(secret):\n    return secret\n")
    listed = repo_map_tool.mapped_files

    def listed_then_swapped(root: Path) -> tuple[list[str], bool]:
        files = listed(root)
        target = root / "shop" / "pricing.py"
        target.unlink()
        target.symlink_to(outside)  # the swap, after the listing
        return files

    monkeypatch.setattr(repo_map_tool, "mapped_files", listed_then_swapped)
    result = await run_tool(TOOL, {"focus": ["OUTSIDE_CANARY_FUNCTION", "shop/pricing.py"]}, ctx)
    assert "OUTSIDE_CANARY_FUNCTION" not in result.text
    assert "shop/reports.py" in result.text  # the rest is mapped
