"""@-mentions: what a prompt's `@path` attaches, where the model sees it, and completion."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.agent import events
from agent_server.agent.mentions import MAX_ATTACHMENTS, complete, find_mentions
from agent_server.agent.transcript import entry_events
from agent_server.llm.messages import ImageContent, TextContent, UserMessage
from agent_server.lsp import items
from agent_server.lsp.items import transcript_items
from agent_server.session.entries import MessageEntry
from agent_server.sim.request_checks import check_requests
from tests.agent.conftest import agent_run

# The smallest valid PNG (1x1, transparent).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def test_mentions_are_found_where_a_person_writes_them() -> None:
    text = 'see @README.md, then @"docs/my notes.md" and @src/ but not a@b.com or me@'
    assert [m.path for m in find_mentions(text)] == ["README.md,", "docs/my notes.md", "src/"]
    assert find_mentions("@first at the start")[0].path == "first"


def last_user_blocks(run) -> list[dict]:  # type: ignore[no-untyped-def]
    """The blocks of the last prompt (not tool results) in the last request."""
    body = run.model_requests[-1].request
    prompts = [
        m["content"]
        for m in body["messages"]
        if m["role"] == "user" and not any(b.get("type") == "tool_result" for b in m["content"])
    ]
    return prompts[-1]


def prompt_entry(run) -> MessageEntry:  # type: ignore[no-untyped-def]
    entries = [
        e
        for e in run.session.ledger.tree.branch()
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage) and e.message.note is None
    ]
    return entries[-1]


async def test_a_mentioned_file_and_folder_are_attached_before_the_question(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        system_before = run.session.system_prompt
        await run.session.run_turn("List the files.")
        result = await run.session.run_turn("What does @README.md say about @src/? And @nothing.txt")
        assert result.stop_reason == "end_turn"

        blocks = last_user_blocks(run)
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        # The file as the read tool shows it, the folder as ls lists it, then the question.
        readme = (run.workspace / "README.md").read_text()
        assert texts[0].startswith('<attachment path="README.md" kind="file">')
        assert readme.rstrip("\n") in texts[0]
        assert texts[1].startswith('<attachment path="src/" kind="directory">')
        assert "inventory/" in texts[1]
        assert texts[-1] == "What does @README.md say about @src/? And @nothing.txt"
        # Never in the system prompt; the earlier request is still a prefix of this one.
        assert run.session.system_prompt == system_before
        assert all("<attachment" not in str(r.request.get("system")) for r in run.model_requests)
        assert check_requests(run.sim.records).ok

        # The ledger records what was sent; the transcript shows the typed text and the chips.
        entry = prompt_entry(run)
        assert [a.path for a in entry.message.attachments] == ["README.md", "src/"]
        assert [a.kind for a in entry.message.attachments] == ["file", "directory"]
        [item] = transcript_items(entry_events(entry, {}))
        assert item["content"] == [{"type": "text", "text": texts[-1]}]
        assert [a["path"] for a in item["attachments"]] == ["README.md", "src/"]
        assert item["attachments"][0]["detail"].endswith("lines")
        live = run.of(events.TurnStarted)[-1]
        assert items.update_json(live) == item  # live and reloaded alike


async def test_lines_of_a_file_are_attached_as_the_selection_an_editor_adds(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        lines = "".join(f"line {n}\n" for n in range(1, 41))
        (run.workspace / "notes.txt").write_text(lines)
        (run.workspace / "my notes.txt").write_text(lines)
        (run.workspace / "odd#L2").write_text("a file named so\n")
        await run.session.run_turn(
            'Why @notes.txt#L10-12 and @"my notes.txt#L5", and @odd#L2, not @notes.txt#L9-3?'
        )
        texts = [b["text"] for b in last_user_blocks(run) if b["type"] == "text"]
        assert texts[0].startswith('<attachment path="notes.txt" kind="file">')
        assert "\nline 10\nline 11\nline 12\n" in texts[0] and "Showing lines 10-12 of 40" in texts[0]
        assert "line 9\n" not in texts[0] and "line 13" not in texts[0]
        assert "\nline 5\n" in texts[1] and "line 6" not in texts[1]
        assert "a file named so" in texts[2]  # a file named with #L is the file itself
        entry = prompt_entry(run)
        # notes.txt#L9-3 names no lines: nothing attached for it.
        assert [(a.path, a.detail) for a in entry.message.attachments] == [
            ("notes.txt", "lines 10-12 of 40"), ("my notes.txt", "lines 5-5 of 40"), ("odd#L2", "1 line"),
        ]
        assert check_requests(run.sim.records).ok


async def test_the_next_request_keeps_the_attachment_as_sent_even_after_the_file_changes(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        await run.session.run_turn("Summarise @README.md")
        sent = last_user_blocks(run)[0]["text"]
        (run.workspace / "README.md").write_text("changed\n")
        await run.session.run_turn("And now?")
        body = run.model_requests[-1].request
        texts = [b.get("text", "") for m in body["messages"] if m["role"] == "user" for b in m["content"]]
        assert sent in texts  # byte for byte: the cached prefix holds
        # The agent is told the file changed (it knows the file from the attachment).
        assert any("README.md changed on disk" in t for t in texts)
        assert check_requests(run.sim.records).ok


async def test_refused_and_excess_mentions_are_said_and_images_attached_as_images(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        (run.workspace / "shot.png").write_bytes(PNG)
        outside = tmp_path / "secret.txt"
        outside.write_text("top secret")
        many = " ".join(f"@f{i}.txt" for i in range(MAX_ATTACHMENTS + 1))
        for i in range(MAX_ATTACHMENTS + 1):
            (run.workspace / f"f{i}.txt").write_text(f"file {i}\n")
        await run.session.run_turn(f"Look at @shot.png and @../secret.txt and {many}")
        notices = [n.message for n in run.of(events.Notice)]
        assert any("@../secret.txt was not attached" in n for n in notices)
        assert any(f"at most {MAX_ATTACHMENTS}" in n for n in notices)
        entry = prompt_entry(run)
        kinds = [a.kind for a in entry.message.attachments]
        assert kinds[0] == "image" and len(kinds) == MAX_ATTACHMENTS
        assert isinstance(entry.message.content[1], ImageContent)
        assert all("top secret" not in b.text for b in entry.message.content if isinstance(b, TextContent))
        blocks = last_user_blocks(run)
        assert blocks[1]["type"] == "image" and blocks[1]["source"]["media_type"] == "image/png"


def test_completion_ranks_paths_a_person_means_first(tmp_path: Path) -> None:
    for name in ("src/app.py", "src/apple/core.py", "tests/test_app.py", "docs/map.md", "node_modules/app.js"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    paths = [c.path for c in complete(tmp_path, "src/ap")]
    assert paths[:2] == ["src/app.py", "src/apple/"]
    by_name = [c.path for c in complete(tmp_path, "app")]
    assert by_name[0] == "src/app.py" and "node_modules/app.js" not in by_name
    assert "tests/test_app.py" in by_name  # contains it
    assert [c.path for c in complete(tmp_path, "dcmp")] == ["docs/map.md"]  # in order
    top = complete(tmp_path, "")
    assert [c.path for c in top[:3]] == ["docs/", "src/", "tests/"]
    assert {c.kind for c in top} == {"file", "directory"}


# --- the completion index (issue 49, item 2) --------------------------------------------------


def test_completion_walks_the_workspace_once_not_per_keystroke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_server.agent import mentions

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    walks: list[Path] = []
    original = mentions.walk_files

    def counting(top: Path, *, include_dirs: bool = False) -> Iterator[Path]:
        walks.append(top)
        return original(top, include_dirs=include_dirs)

    monkeypatch.setattr(mentions, "walk_files", counting)
    for typed in ("", "s", "sr", "src", "src/a"):
        assert "src/app.py" in [c.path for c in mentions.complete(tmp_path, typed)]
    assert len(walks) == 1


def test_a_file_made_after_the_index_shows_once_it_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_server.agent import mentions

    assert mentions.complete(tmp_path, "later") == []
    (tmp_path / "later.md").write_text("")
    monkeypatch.setattr(mentions, "INDEX_FRESH", 0.0)  # stale at once: rebuilt behind the answer
    deadline = time.monotonic() + 30
    while "later.md" not in [c.path for c in mentions.complete(tmp_path, "later")]:
        assert time.monotonic() < deadline, "the index was never rebuilt"
        time.sleep(0.05)
