"""Checkpoints: a rewind that also puts back the files the agent wrote or edited."""

from __future__ import annotations

import asyncio
import ctypes
import os
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.agent.checkpoints import (
    DETAILS_KEY,
    NOTE_KIND,
    BlobStore,
    capture,
    plan_restore,
    restore,
    version_after,
)
from agent_server.agent.transcript import entry_events
from agent_server.errors import EntryNotFoundError
from agent_server.llm.messages import TextContent, ToolResultMessage, UserMessage
from agent_server.lsp.items import transcript_items
from agent_server.session.entries import FileRestoreEntry, MessageEntry
from agent_server.session.ledger import Ledger
from tests.agent.conftest import agent_run

SCENARIO = {
    "name": "checkpoints",
    "turns": [
        {
            "user": "create the note",
            "steps": [
                {"tools": [{"name": "write", "arguments": {"path": "notes/a.md", "content": "v1\n"}}]},
                {"text": "Created."},
            ],
        },
        {
            "user": "edit the note",
            "steps": [
                {
                    "tools": [
                        {
                            "name": "edit",
                            "arguments": {"path": "notes/a.md", "oldText": "v1\n", "newText": "v2\n"},
                        }
                    ]
                },
                {"text": "Edited."},
            ],
        },
        {
            "user": "change the readme",
            "steps": [
                {"tools": [{"name": "edit", "arguments": {"path": "README.md", "oldText": "# stockroom\n", "newText": "# Stockroom\n"}}]},
                {"tools": [{"name": "bash", "arguments": {"command": "echo made by bash > made.txt"}}]},
                {"text": "Changed."},
            ],
        },
    ],
}


def prompts(run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Prompt text -> entry id, on every branch."""
    return {
        e.message.content[-1].text: e.id
        for e in run.session.ledger.tree.entries
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage) and e.message.note is None
    }


async def run_all(run) -> None:  # type: ignore[no-untyped-def]
    for turn in SCENARIO["turns"]:
        result = await run.session.run_turn(turn["user"])
        assert result.stop_reason == "end_turn", result


async def test_rewinding_to_a_prompt_puts_back_what_the_agent_wrote_and_says_what_it_cannot(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path, scenario=SCENARIO) as run:
        readme = (run.workspace / "README.md").read_text()
        await run_all(run)
        assert (run.workspace / "notes/a.md").read_text() == "v2\n"
        ids = prompts(run)

        plan = run.session.rewinder.plan(ids["create the note"])
        assert {(f.path, f.action, f.changed_since) for f in plan.files} == {
            ("notes/a.md", "delete", False),
            ("README.md", "restore", False),
        }
        assert plan.commands == ("echo made by bash > made.txt",)
        assert plan.untracked == ("made.txt",)  # changed by bash: listed, not restorable

        rewound = await run.session.rewind(ids["create the note"], restore="both")
        assert not (run.workspace / "notes/a.md").exists()
        assert (run.workspace / "README.md").read_text() == readme
        assert (run.workspace / "made.txt").exists()  # bash's work stays
        assert rewound.prompt == (TextContent("create the note"),)
        assert {(v.path, v.after is None) for v in rewound.files} == {
            ("notes/a.md", True),
            ("README.md", False),
        }
        # The restore is on the ledger (after the rewind, so the new branch shows it), and the
        # contents it replaced are kept, content-addressed.
        restore = run.session.ledger.tree.get(str(rewound.leaf_id))
        assert isinstance(restore, FileRestoreEntry)
        [item] = transcript_items(entry_events(restore, {}))
        assert item["kind"] == "fileRestore"
        blobs = BlobStore(run.session.rewinder.checkpoints.root)  # type: ignore[union-attr]
        replaced = {v.path: v.before for v in restore.files}
        assert blobs.get(str(replaced["notes/a.md"])) == b"v2\n"
        # The conversation went back too: the next request holds none of the three turns.
        await run.session.run_turn("start again")
        texts = str(run.model_requests[-1].request["messages"])
        assert "edit the note" not in texts and "create the note" not in texts


async def test_a_rewind_cancelled_during_its_file_restore_still_records_it(
    tmp_path: Path,
) -> None:
    # The editor cancels the rewind while its files are being put back (in a thread that
    # cannot stop halfway): the files it changed are recorded all the same, so that a later
    # rewind knows what it replaced.
    async with agent_run(tmp_path, scenario=SCENARIO) as run:
        await run_all(run)
        ids = prompts(run)
        rewinding = asyncio.ensure_future(
            run.session.rewind(ids["edit the note"], restore="files"))
        await asyncio.sleep(0)  # it is putting the files back now
        rewinding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await rewinding
        assert (run.workspace / "notes/a.md").read_text() == "v1\n"
        restores = [e for e in run.session.ledger.tree.entries if isinstance(e, FileRestoreEntry)]
        assert len(restores) == 1
        assert {f.path for f in restores[0].files} == {"notes/a.md", "README.md"}
        # The session is not left busy, and a rewind to before the restore undoes it.
        assert restores[0].parent_id is not None
        await run.session.rewind(restores[0].parent_id, restore="files")
        assert (run.workspace / "notes/a.md").read_text() == "v2\n"


async def test_files_only_keeps_the_conversation_and_tells_the_model(tmp_path: Path) -> None:
    async with agent_run(tmp_path, scenario=SCENARIO) as run:
        await run_all(run)
        ids = prompts(run)
        leaf = run.session.ledger.leaf_id
        rewound = await run.session.rewind(ids["edit the note"], restore="files")
        assert (run.workspace / "notes/a.md").read_text() == "v1\n"
        assert rewound.prompt is None
        # The conversation continues where it was, with a note for the model.
        assert run.session.ledger.tree.is_on_branch(str(leaf))
        await run.session.run_turn("what now?")
        user_texts = [
            b["text"]
            for m in run.model_requests[-1].request["messages"]
            if m["role"] == "user"
            for b in m["content"]
            if b.get("type") == "text"
        ]
        notes = [t for t in user_texts if "restored these files" in t]
        assert len(notes) == 1 and "notes/a.md" in notes[0] and "README.md" in notes[0]
        assert not any("changed on disk" in t for t in user_texts)  # not also an external edit
        notes_in_ledger = [
            e for e in run.session.ledger.tree.branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage) and e.message.note == NOTE_KIND
        ]
        assert len(notes_in_ledger) == 1

        # The restore is recorded: a rewind to before it puts back what it replaced.
        restore = next(e for e in run.session.ledger.tree.entries if isinstance(e, FileRestoreEntry))
        before_restore = restore.parent_id
        assert before_restore is not None
        await run.session.rewind(before_restore, restore="files")
        assert (run.workspace / "notes/a.md").read_text() == "v2\n"


async def test_a_file_changed_since_the_agents_edit_is_flagged(tmp_path: Path) -> None:
    async with agent_run(tmp_path, scenario=SCENARIO) as run:
        await run_all(run)
        (run.workspace / "notes/a.md").write_text("mine\n")
        plan = run.session.rewinder.plan(prompts(run)["edit the note"])
        [note] = [f for f in plan.files if f.path == "notes/a.md"]
        assert note.changed_since and note.action == "restore"
        assert "notes/a.md" not in plan.untracked


async def test_restores_follow_time_not_the_branch(tmp_path: Path) -> None:
    """A file's history is the file system's: a conversation-only rewind leaves the files as
    they are, and a later restore to before everything undoes both branches' changes."""
    async with agent_run(tmp_path, scenario=SCENARIO) as run:
        await run.session.run_turn("create the note")
        await run.session.run_turn("edit the note")
        ids = prompts(run)
        await run.session.rewind(ids["edit the note"])  # the conversation only
        assert (run.workspace / "notes/a.md").read_text() == "v2\n"
        await run.session.run_turn("edit the note")  # fails to match v1: the model is told
        plan = run.session.rewinder.plan(ids["create the note"])
        assert [(f.path, f.action) for f in plan.files] == [("notes/a.md", "delete")]
        await run.session.rewind(ids["create the note"], restore="files")
        assert not (run.workspace / "notes/a.md").exists()


async def test_nothing_to_restore_and_unknown_entries(tmp_path: Path) -> None:
    async with agent_run(tmp_path, scenario=SCENARIO) as run:
        await run.session.run_turn("create the note")
        last = run.session.ledger.leaf_id
        assert last is not None
        plan = run.session.rewinder.plan(last)
        assert plan.files == () and plan.commands == ()
        with pytest.raises(EntryNotFoundError):
            run.session.rewinder.plan("nope")
        with pytest.raises(EntryNotFoundError):
            await run.session.rewind("nope", restore="both")


# --- the restore property -------------------------------------------------------------------

FILES = ("a.txt", "deep/b.txt", "c.md")
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("point"), st.just(0), st.just(b"")),
        st.tuples(st.just("write"), st.integers(0, len(FILES) - 1), st.binary(max_size=12)),
        st.tuples(st.just("restore"), st.integers(0, 50), st.just(b"")),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(operations=OPERATIONS)
def test_a_restore_puts_every_file_the_agent_wrote_back_as_it_was_at_that_point(
    operations: list[tuple[str, int, bytes]],
) -> None:
    """Writes by the agent (captured as the tool runner captures them), points in the
    conversation and restores to any earlier point, in any order: after each restore, every
    file the agent wrote is as it was when that point was written (absent if it did not exist),
    including across earlier restores (they are recorded, and undone in turn)."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        workspace = root / "ws"
        workspace.mkdir()
        blobs = BlobStore(root / "blobs")

        def state() -> dict[str, bytes | None]:
            return {f: (workspace / f).read_bytes() if (workspace / f).exists() else None for f in FILES}

        with Ledger.create(root / "s.jsonl", session_id="s", workspace=str(workspace)) as ledger:
            points = [(ledger.append_message(UserMessage.of_text("start")).id, state())]
            for number, (kind, value, data) in enumerate(operations):
                if kind == "point":
                    points.append((ledger.append_message(UserMessage.of_text(f"p{number}")).id, state()))
                elif kind == "write":
                    captured = capture(workspace, blobs, FILES[value])
                    assert captured is not None
                    (workspace / FILES[value]).parent.mkdir(parents=True, exist_ok=True)
                    (workspace / FILES[value]).write_bytes(data)
                    version = version_after(captured, blobs)
                    result = ToolResultMessage(
                        f"call{number}", "write", (TextContent("ok"),), details={DETAILS_KEY: version.to_json()}
                    )
                    ledger.append_message(result)
                else:
                    target, expected = points[value % len(points)]
                    plan = plan_restore(ledger, target, workspace)
                    files, problems = restore(plan, workspace, blobs)
                    assert problems == ()
                    if files:
                        ledger.add(FileRestoreEntry, target, files)
                    assert state() == expected


async def test_a_rejected_command_is_not_listed_as_run(tmp_path: Path) -> None:
    from agent_server.agent.settings import AgentSettings

    scenario = {
        "name": "rejected",
        "turns": [{
            "user": "clean up",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": "rm -rf build"}}]},
                {"text": "Not allowed."},
            ],
        }],
    }
    async with agent_run(
        tmp_path, scenario=scenario, settings=AgentSettings(permissions_mode="ask")
    ) as run:
        await run.session.run_turn("clean up")
        results = [
            e.message for e in run.session.ledger.tree.entries
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
        ]
        assert results and (results[0].details or {}).get("permission") == "denied"
        plan = run.session.rewinder.plan(prompts(run)["clean up"])
        assert plan.commands == ()


@pytest.mark.parametrize("before", [b"v1\n", None], ids=["put-back", "deleted"])
def test_a_restore_never_writes_or_deletes_through_a_link_swapped_in(
    tmp_path: Path, before: bytes | None
) -> None:
    # A background job keeps turning the folder of a file the agent wrote into a link to
    # outside the workspace and back while the user rewinds, again and again: the outside
    # file is never changed nor deleted, and its content never stored as a checkpoint.
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.txt").write_text("OUTSIDE\n")
    blobs = BlobStore(tmp_path / "blobs")
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace=str(workspace)) as ledger:
        if before is not None:
            (workspace / "d" / "x.txt").write_bytes(before)
        point = ledger.append_message(UserMessage.of_text("start")).id
        captured = capture(workspace, blobs, "d/x.txt")
        assert captured is not None
        (workspace / "d" / "x.txt").write_text("written by the agent\n")
        version = version_after(captured, blobs)
        ledger.append_message(ToolResultMessage(
            "c1", "write", (TextContent("ok"),), details={DETAILS_KEY: version.to_json()}))
        plan = plan_restore(ledger, point, workspace)
        assert [f.path for f in plan.files] == ["d/x.txt"]

        # The folder and a link to the outside trade places atomically (renameat2's
        # RENAME_EXCHANGE): `d` is never missing, so nothing on the restore's side makes it.
        os.symlink(outside, workspace / ".link")
        stop = threading.Event()

        def swap() -> None:
            while not stop.is_set():
                exchange(workspace / "d", workspace / ".link")

        swapper = threading.Thread(target=swap, daemon=True)
        swapper.start()
        try:
            for _ in range(1500):
                restore(plan, workspace, blobs)
        finally:
            stop.set()
            swapper.join()
    assert (outside / "x.txt").read_text() == "OUTSIDE\n"
    assert sorted(p.name for p in outside.iterdir()) == ["x.txt"]
    stored = [p.read_bytes() for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    assert b"OUTSIDE\n" not in stored


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_LIBC = ctypes.CDLL(None, use_errno=True)


def exchange(first: Path, second: Path) -> None:
    """Swap two names atomically (Linux renameat2 with RENAME_EXCHANGE)."""
    if _LIBC.renameat2(_AT_FDCWD, bytes(first), _AT_FDCWD, bytes(second), _RENAME_EXCHANGE):
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
