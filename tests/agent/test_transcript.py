"""The paged transcript: pages walk the current branch back to the root through compactions
and rewinds, each entry exactly once, in the shapes of the live updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.agent.tools import default_tools
from agent_server.agent.transcript import Page, entry_events, page
from agent_server.errors import EntryNotFoundError
from agent_server.lsp.items import transcript_items
from agent_server.session.entries import CompactionEntry, ModelChangeEntry, SystemPromptEntry
from agent_server.session.ledger import Ledger
from tests.session.builders import assistant, call, result, user

TOOLS = default_tools()


def turn(ledger: Ledger, n: int, calls: int = 2) -> None:
    ledger.append_message(user(f"prompt {n}"))
    ids = [f"t{n}_{k}" for k in range(calls)]
    ledger.append_message(
        assistant(f"looking {n}", *(call(i, "read", path=f"src/{i}.py") for i in ids))
    )
    for i in ids:
        ledger.append_message(result(i, f"body of {i}"))
    ledger.append_message(assistant(f"answer {n}"))


def all_pages(ledger: Ledger, limit: int) -> list[Page]:
    pages = [page(ledger, TOOLS, limit=limit)]
    while pages[-1].cursor is not None:
        pages.append(page(ledger, TOOLS, before=pages[-1].cursor, limit=limit))
    return pages


def whole_branch(ledger: Ledger) -> list[dict[str, object]]:
    tools = {tool.spec.name: tool for tool in TOOLS}
    return [item for entry in ledger.tree.branch() for item in transcript_items(entry_events(entry, tools))]


@pytest.fixture
def ledger(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w") as opened:
        opened.add(ModelChangeEntry, "anthropic-messages", "m1")
        opened.add(SystemPromptEntry, "You are a coding agent.")
        yield opened


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 50])
def test_pages_cover_the_branch_once_in_order(ledger: Ledger, limit: int) -> None:
    for n in range(6):
        turn(ledger, n, calls=n % 3)
    pages = all_pages(ledger, limit)
    stitched = [item for p in reversed(pages) for item in transcript_items(p.events)]
    assert stitched == whole_branch(ledger)
    assert len(pages) > 1 or limit == 50
    for p in pages:
        # a page never starts with a tool's result: its call is on the same page
        assert transcript_items(p.events)[0]["kind"] != "toolCallUpdate"
        calls = {i["toolCallId"] for i in transcript_items(p.events) if i["kind"] == "toolCall"}
        assert {i["toolCallId"] for i in transcript_items(p.events) if i["kind"] == "toolCallUpdate"} <= calls


def test_items_are_the_live_shapes_with_the_tools_titles(ledger: Ledger) -> None:
    turn(ledger, 0, calls=1)
    items = transcript_items(page(ledger, TOOLS).events)
    kinds = [i["kind"] for i in items]
    assert kinds == [
        "modelChange",
        "userMessage",
        "messageChunk",
        "toolCall",
        "toolCallUpdate",
        "messageChunk",
    ]
    prompt, first_answer, tool_call, update, answer = items[1:]
    assert prompt["content"] == [{"type": "text", "text": "prompt 0"}]
    assert prompt["parentId"] == ledger.tree.branch_ids()[1]  # the system prompt, not shown
    assert tool_call["title"] == "Read src/t0_0.py"
    assert tool_call["toolKind"] == "read"
    assert tool_call["locations"] == [{"path": "src/t0_0.py"}]
    assert update["status"] == "completed"
    assert update["content"][0]["content"]["text"] == "body of t0_0"
    # an answer's messageId is its ledger entry: the rewind target
    assert answer["messageId"] == ledger.leaf_id
    assert first_answer["content"]["text"] == "looking 0"


def test_paging_goes_through_compactions(ledger: Ledger) -> None:
    for n in range(3):
        turn(ledger, n)
    kept = ledger.tree.branch_ids()[-4]
    ledger.add(
        CompactionEntry,
        summary="S1", first_kept_entry_id=kept, tokens_before=9, reason="threshold", tokens_after=None
    )
    for n in range(3, 5):
        turn(ledger, n)
    ledger.add(
        CompactionEntry,
        summary="S2", first_kept_entry_id=None, tokens_before=9, reason="manual", tokens_after=None
    )
    turn(ledger, 5)
    pages = all_pages(ledger, limit=4)
    stitched = [item for p in reversed(pages) for item in transcript_items(p.events)]
    assert stitched == whole_branch(ledger)
    markers = [i for i in stitched if i["kind"] == "compaction"]
    assert [m["summary"] for m in markers] == ["S1", "S2"]
    assert markers[0]["firstKeptEntryId"] == kept
    assert markers[1]["firstKeptEntryId"] is None
    assert [i["content"][0]["text"] for i in stitched if i["kind"] == "userMessage"] == [
        f"prompt {n}" for n in range(6)
    ]


def test_paging_follows_the_current_branch_and_old_cursors_their_own(ledger: Ledger) -> None:
    for n in range(4):
        turn(ledger, n)
    before_rewind = page(ledger, TOOLS, limit=3)
    prompts = [i for i in whole_branch(ledger) if i["kind"] == "userMessage"]
    ledger.rewind(prompts[2]["parentId"])  # ask the third prompt again
    turn(ledger, 9)
    stitched = [item for p in reversed(all_pages(ledger, limit=3)) for item in transcript_items(p.events)]
    texts = [i["content"][0]["text"] for i in stitched if i["kind"] == "userMessage"]
    assert texts == ["prompt 0", "prompt 1", "prompt 9"]
    assert [i["kind"] for i in stitched].count("branch") == 1
    # a cursor from before the rewind still pages the path it came from
    assert before_rewind.cursor is not None
    older = page(ledger, TOOLS, before=before_rewind.cursor, limit=1000)
    old_texts = [i["content"][0]["text"] for i in transcript_items(older.events) if i["kind"] == "userMessage"]
    assert old_texts[-1] in ("prompt 2", "prompt 3")
    assert older.cursor is None


def test_a_cursor_from_elsewhere_is_refused(ledger: Ledger) -> None:
    turn(ledger, 0)
    with pytest.raises(EntryNotFoundError, match="cursor"):
        page(ledger, TOOLS, before="nope")


def test_rejected_and_unknown_tools_show_why(ledger: Ledger) -> None:
    ledger.append_message(user("go"))
    ledger.append_message(
        assistant("", call("w1", "write", path="a.txt", content="x"), call("z1", "zap"))
    )
    ledger.append_message(result("w1", "The user denied this write.", "write", error=True))
    ledger.append_message(result("z1", "Unknown tool zap.", "zap", error=True))
    items = transcript_items(page(ledger, TOOLS).events)
    write, zap = (i for i in items if i["kind"] == "toolCall")
    assert write["title"].startswith("Write") and write["toolKind"] == "edit"
    assert zap["title"] == "zap" and zap["toolKind"] == "other"
    updates = [i for i in items if i["kind"] == "toolCallUpdate"]
    assert [u["status"] for u in updates] == ["failed", "failed"]
    assert "denied" in updates[0]["content"][0]["content"]["text"]


async def test_a_reload_shows_the_titles_and_the_rejection_the_live_turn_showed(
    tmp_path: Path,
) -> None:
    """Left over from the editor issue: "Read README.md" live and reloaded (never the tool's
    bare name), the grep pattern kept, and a rejected call "failed" with the user's reason."""
    from agent_server.agent import events
    from agent_server.agent.permissions import PermissionRequest
    from agent_server.agent.settings import AgentSettings
    from agent_server.agent.workspace import WorkspaceAgent
    from agent_server.lsp import items
    from agent_server.sim.scenario import parse_scenario
    from agent_server.sim.server import SimServer
    from agent_server.sim.simulator import Simulator
    from tests.agent.conftest import FAST_RETRY

    scenario = parse_scenario(
        {
            "name": "titles",
            "turns": [
                {
                    "user": "look around",
                    "steps": [
                        {
                            "tools": [
                                {"name": "read", "arguments": {"path": "README.md"}},
                                {"name": "grep", "arguments": {"pattern": "TODO|FIXME", "path": "src"}},
                                {"name": "bash", "arguments": {"command": "rm -rf build"}},
                            ]
                        },
                        {"text": "Done."},
                    ],
                }
            ],
        }
    )
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "README.md").write_text("# hi\n")
    (workspace / "src" / "a.py").write_text("# TODO\n")
    live: list[dict[str, object]] = []

    async def reject(request: PermissionRequest) -> str | None:
        return "reject_once"

    def emit(event: events.AgentEvent) -> None:
        if (item := items.update_json(event)) is not None and item["kind"].startswith("toolCall"):
            live.append(item)

    async with SimServer(Simulator(scenario=scenario)) as server:
        settings = AgentSettings(provider="sim", base_url=server.base_url, sessions_dir=str(tmp_path / "s"))
        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        session = agent.create(emit=emit, ask=reject)
        await session.run_turn("look around")
        await agent.close()
        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        loaded = transcript_items(agent.open(session.session_id).transcript().events)
        await agent.close()

    def calls(items: list[dict[str, object]]) -> dict[object, object]:
        return {i["toolCallId"]: i["title"] for i in items if i["kind"] == "toolCall"}

    def finals(items: list[dict[str, object]]) -> dict[object, object]:
        return {
            i["toolCallId"]: (i["status"], i.get("rawOutput"))
            for i in items
            if i["kind"] == "toolCallUpdate" and i.get("status") in ("completed", "failed")
        }

    assert calls(loaded) == calls(live)
    assert sorted(calls(live).values()) == ["Grep TODO|FIXME in src", "Read README.md", "Run: rm -rf build"]
    rejected = [v for v in finals(loaded).values() if v[0] == "failed"]
    assert rejected == [("failed", {"permission": "denied", "reason": "the user rejected bash"})]
    assert [v for v in finals(live).values() if v[0] == "failed"] == rejected
