from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from agent_server.errors import EntryNotFoundError, SessionError, SessionNotFoundError
from agent_server.llm.messages import message_to_json
from agent_server.session import ledger_file
from agent_server.session.entries import (
    BranchEntry,
    CompactionDetails,
    CompactionEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    SystemPromptEntry,
    TitleEntry,
    UnknownEntry,
)
from agent_server.session.ledger import Ledger

from .builders import assistant, call, result, user


def new_ledger(tmp_path: Path, **kwargs: object) -> Ledger:
    return Ledger.create(
        tmp_path / "s1.jsonl",
        session_id="s1",
        workspace="/work/ws",
        **kwargs,  # type: ignore[arg-type]
    )


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def test_create_writes_the_header_line(tmp_path: Path) -> None:
    with new_ledger(tmp_path, title="First") as ledger:
        assert ledger.header.session_id == "s1"
        assert ledger.leaf_id is None
    [header] = lines(tmp_path / "s1.jsonl")
    assert header["type"] == "session"
    assert header["version"] == 1
    assert header["id"] == "s1"
    assert header["workspace"] == "/work/ws"
    assert header["title"] == "First"
    assert str(header["createdAt"]).endswith("Z")


def test_create_refuses_an_existing_file(tmp_path: Path) -> None:
    new_ledger(tmp_path).close()
    with pytest.raises(SessionError, match="already exists"):
        new_ledger(tmp_path)


def test_open_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        Ledger.open(tmp_path / "nope.jsonl")


def test_appends_are_one_line_each_and_chain_parents(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        e1 = ledger.append_message(user("hi"))
        e2 = ledger.append_message(assistant("hello"))
        e3 = ledger.add(TitleEntry, "Greeting")
        e4 = ledger.add(ModelChangeEntry, "anthropic", "claude-sonnet-4-6")
        assert [e.parent_id for e in (e1, e2, e3, e4)] == [None, e1.id, e2.id, e3.id]
        assert ledger.leaf_id == e4.id
        assert len({e1.id, e2.id, e3.id, e4.id}) == 4
        assert all(len(e.id) == 8 for e in (e1, e2, e3, e4))
        assert ledger.facts.title == "Greeting"
        assert ledger.facts.model_change == e4
        saved = list(ledger.tree.entries)
    data = lines(tmp_path / "s1.jsonl")
    assert [d["type"] for d in data] == ["session", "message", "message", "title", "modelChange"]
    assert data[1]["message"] == message_to_json(user("hi"))
    with Ledger.open(tmp_path / "s1.jsonl") as reopened:
        assert list(reopened.tree.entries) == saved
        assert reopened.leaf_id == e4.id
        assert reopened.load_report.clean
        assert reopened.load_report.entry_count == 4


def test_system_prompt_and_model_are_recorded(tmp_path: Path) -> None:
    with new_ledger(tmp_path, model="sim-small") as ledger:
        assert ledger.facts.latest_model() == "sim-small"
        assert ledger.facts.system_prompt() is None
        ledger.add(SystemPromptEntry, "You are an agent.")
        ledger.add(ModelChangeEntry, "openai-responses", "gpt-5.1")
        ledger.add(SystemPromptEntry, "You are an agent. v2")
    with Ledger.open(tmp_path / "s1.jsonl") as reopened:
        assert reopened.header.model == "sim-small"
        assert reopened.facts.latest_model() == "gpt-5.1"
        assert reopened.facts.system_prompt() == "You are an agent. v2"
        assert reopened.facts.meta.model == "gpt-5.1"


def test_stored_entries_equal_what_a_reload_gives(tmp_path: Path) -> None:
    # Argument key order and characters that str.splitlines would split on must survive.
    message = assistant("a\u2028b\x1c c\r", call("c1", "edit", z=1, a={"y": 2, "b": 3}))
    with new_ledger(tmp_path) as ledger:
        stored = ledger.append_message(message)
        assert list(stored.message.tool_calls[0].arguments) == ["a", "z"]
    with Ledger.open(tmp_path / "s1.jsonl") as reopened:
        loaded = reopened.tree.get(stored.id)
        assert loaded == stored
        assert isinstance(loaded, MessageEntry)
        assert json.dumps(message_to_json(loaded.message)) == json.dumps(
            message_to_json(stored.message)
        )


def test_rewind_branches_and_tree_queries(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        u1 = ledger.append_message(user("one"))
        a1 = ledger.append_message(assistant("ONE"))
        u2 = ledger.append_message(user("two"))
        ledger.append_message(assistant("TWO"))
        rewind = ledger.rewind(a1.id)
        assert isinstance(rewind, BranchEntry)
        assert rewind.parent_id == a1.id
        assert rewind.target_id == a1.id
        u3 = ledger.append_message(user("three"))
        assert [e.id for e in ledger.tree.branch()] == [u1.id, a1.id, rewind.id, u3.id]
        assert [e.id for e in ledger.tree.children(a1.id)] == [u2.id, rewind.id]
        assert [e.id for e in ledger.tree.children(None)] == [u1.id]
        assert [e.id for e in ledger.tree.branch(u2.id)] == [u1.id, a1.id, u2.id]
        assert ledger.tree.get("nope") is None
        with pytest.raises(EntryNotFoundError):
            ledger.rewind("nope")
        with pytest.raises(EntryNotFoundError):
            ledger.tree.branch("nope")
        start = ledger.rewind(None)
        assert start.parent_id is None
        assert ledger.tree.branch() == [start]
        # nothing was deleted
        assert len(ledger.tree.entries) == 7


def test_projection_entries_stop_at_the_first_kept_entry(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        old = [ledger.append_message(user(f"old {i}")).id for i in range(50)]
        kept = ledger.append_message(user("kept"))
        ledger.append_message(assistant("kept answer"))
        compaction = ledger.add(
            CompactionEntry,
            summary="S",
            first_kept_entry_id=kept.id,
            tokens_before=100,
            tokens_after=10,
            reason="threshold",
            details=CompactionDetails(("a",), ()),
        )
        after = ledger.append_message(user("after"))
        tail = ledger.tree.projection_entries()
        assert next(e.id for e in tail) == kept.id
        assert tail[-2:] == [compaction, after]
        assert ledger.tree.branch()[-len(tail) :] == tail

    # Reopened, it never reads the entries before the kept one.
    with Ledger.open(ledger.path) as reopened:
        asked: list[str] = []
        read = reopened.tree._read

        def spy(numbers: Iterable[int]) -> list[Entry]:
            entries = read(numbers)
            asked.extend(e.id for e in entries)
            return entries

        reopened.tree._read = spy  # type: ignore[method-assign]
        assert reopened.tree.projection_entries() == tail
        assert asked
        assert not set(asked) & set(old)


def test_projection_entries_when_nothing_was_kept(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        ledger.append_message(user("old"))
        compaction = ledger.add(
            CompactionEntry,
            summary="S", first_kept_entry_id=None, tokens_before=5, reason="manual", tokens_after=None
        )
        assert ledger.tree.projection_entries() == [compaction]
        after = ledger.append_message(user("new"))
        assert ledger.tree.projection_entries() == [compaction, after]


def test_projection_entries_without_compaction_is_the_branch(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        for i in range(5):
            ledger.append_message(user(str(i)))
        assert ledger.tree.projection_entries() == ledger.tree.branch()


def test_compaction_must_keep_an_entry_on_the_branch(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        u1 = ledger.append_message(user("one"))
        ledger.append_message(user("two"))
        ledger.rewind(u1.id)
        other = ledger.append_message(user("three"))
        with pytest.raises(EntryNotFoundError, match="not on the current branch"):
            ledger.add(
                CompactionEntry,
                summary="S", first_kept_entry_id="ffffffff", tokens_before=1, reason="manual", tokens_after=None
            )
        two = ledger.tree.children(u1.id)[0]
        with pytest.raises(EntryNotFoundError):
            ledger.add(
                CompactionEntry,
                summary="S", first_kept_entry_id=two.id, tokens_before=1, reason="manual", tokens_after=None
            )
        entry = ledger.add(
            CompactionEntry,
            summary="S", first_kept_entry_id=other.id, tokens_before=1, reason="manual", tokens_after=None
        )
        assert isinstance(entry, CompactionEntry)


def test_generic_append_checks_ids_and_parents(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        first = ledger.add(TitleEntry, "t")
        with pytest.raises(SessionError, match="already exists"):
            ledger.append(TitleEntry(first.id, None, "2025-01-01T00:00:00.000Z", "x"))
        with pytest.raises(EntryNotFoundError):
            ledger.append(TitleEntry("abcd0000", "missing", "2025-01-01T00:00:00.000Z", "x"))
        raw = {"type": "future", "id": "f0000000", "parentId": first.id, "timestamp": "", "v": 1}
        stored = ledger.append(UnknownEntry(raw))
        assert stored == UnknownEntry(raw)
        assert ledger.leaf_id == "f0000000"


def test_closed_ledger_refuses_appends(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path)
    ledger.close()
    ledger.close()  # idempotent
    assert ledger.closed
    with pytest.raises(SessionError, match="closed"):
        ledger.append_message(user("late"))


def test_fsync_always_syncs_every_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts: dict[str, list[int]] = {}
    for mode in ("always", "turn", "never"):
        ledger = Ledger.create(
            tmp_path / f"{mode}.jsonl",
            session_id=mode,
            workspace="/w",
            fsync=mode,  # type: ignore[arg-type]
        )
        calls: list[int] = []
        monkeypatch.setattr(ledger_file.os, "fsync", lambda fd, calls=calls: calls.append(fd))
        for text in ("a", "b", "c"):
            ledger.append_message(user(text))
        after_appends = len(calls)
        ledger.sync()
        counts[mode] = [after_appends, len(calls)]
        monkeypatch.undo()
        ledger.close()
    assert counts == {"always": [3, 4], "turn": [0, 1], "never": [0, 0]}


def test_sync_calls_the_hook(tmp_path: Path) -> None:
    seen: list[int] = []
    ledger = new_ledger(tmp_path, on_sync=lambda led: seen.append(led.entry_count))
    ledger.append_message(user("x"))
    ledger.sync()
    ledger.close()
    assert seen == [0, 1, 1]  # create, sync, close


def test_a_failed_write_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = new_ledger(tmp_path)
    ledger.append_message(user("before"))
    size = (tmp_path / "s1.jsonl").stat().st_size
    real_write = os.write

    def half_then_fail(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ledger_file.os, "write", half_then_fail)
    with pytest.raises(SessionError, match="not saved"):
        ledger.append_message(user("lost " * 50))
    monkeypatch.undo()
    assert (tmp_path / "s1.jsonl").stat().st_size == size
    ledger.append_message(user("after"))
    ledger.close()
    with Ledger.open(tmp_path / "s1.jsonl") as reopened:
        assert reopened.load_report.clean
        texts = [e.message.content[0].text for e in reopened.tree.entries]  # type: ignore[union-attr]
        assert texts == ["before", "after"]


def test_tool_results_and_usage_survive(tmp_path: Path) -> None:
    with new_ledger(tmp_path) as ledger:
        ledger.append_message(user("go"))
        ledger.append_message(assistant("", call("c1", "read", path="a.py")))
        ledger.append_message(result("c1", "x" * 10_000))
        before = list(ledger.tree.entries)
    with Ledger.open(tmp_path / "s1.jsonl") as reopened:
        assert list(reopened.tree.entries) == before
