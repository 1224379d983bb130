"""A ledger survives a crash mid-write and corrupt lines without losing intact entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_server.errors import LedgerFormatError
from agent_server.session.entries import MessageEntry, UnknownEntry
from agent_server.session.ledger import Ledger
from agent_server.session.ledger_file import read_ledger

from .builders import assistant, call, result, user


def build(path: Path) -> list[MessageEntry]:
    with Ledger.create(path, session_id="s1", workspace="/w", fsync="never") as ledger:
        entries = [
            ledger.append_message(user("fix the bug")),
            ledger.append_message(assistant("", call("c1", "read", path="src/é.py"))),
            ledger.append_message(result("c1", "def f():\n    return '中文 ünïcode'\n")),
            # the last line: long enough, with multi-byte characters to split mid-character
            ledger.append_message(assistant("Fixed it: 中文 é ü " * 8)),
        ]
    return entries


def test_cut_at_every_byte_of_the_last_line(tmp_path: Path) -> None:
    original = tmp_path / "original.jsonl"
    entries = build(original)
    data = original.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    assert len(data) - last_start > 200
    for cut in range(last_start, len(data) + 1):
        path = tmp_path / f"cut{cut}.jsonl"
        path.write_bytes(data[:cut])
        complete = cut >= len(data) - 1  # only the newline missing: the entry is whole
        expected = entries if complete else entries[:-1]
        with Ledger.open(path, fsync="never") as ledger:
            assert list(ledger.tree.entries) == expected, cut
            report = ledger.load_report
            if cut == last_start or cut == len(data):
                assert report.clean, cut
            elif complete:
                assert [i.action for i in report.issues] == ["newline_added"]
            else:
                [issue] = report.issues
                assert issue.action == "truncated"
                assert issue.line_number == 5
                assert report.truncated_bytes == cut - last_start
            added = ledger.append_message(user("after the crash"))
        assert path.read_bytes().endswith(b"\n")
        with Ledger.open(path, fsync="never") as again:
            assert again.load_report.clean, cut
            assert list(again.tree.entries) == [*expected, added]
            assert added.parent_id == expected[-1].id


def test_a_header_without_its_newline_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Ledger.create(path, session_id="s", workspace="/w").close()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with Ledger.open(path) as ledger:
        ledger.append_message(user("x"))
    with Ledger.open(path) as ledger:
        assert ledger.load_report.clean
        assert len(ledger.tree.entries) == 1


def test_a_torn_header_is_not_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","vers')
    with pytest.raises(LedgerFormatError, match="line 1"):
        Ledger.open(path)
    path.write_bytes(b"")
    with pytest.raises(LedgerFormatError, match="empty"):
        Ledger.open(path)
    path.write_bytes(b'{"type":"message"}\n')
    with pytest.raises(LedgerFormatError, match="not a session ledger"):
        Ledger.open(path)


def test_corrupt_middle_lines_are_reported_skipped_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    entries = build(path)
    raw_lines = path.read_bytes().split(b"\n")
    # line numbers: 1 header, 2..5 the entries; corrupt line 3 and add junk after line 4
    raw_lines[2] = b'{"type":"message","id":"' + b"\xff\xfe garbage"
    raw_lines.insert(4, b"not json at all")
    raw_lines.insert(5, b'{"type":"message","id":"x1","parentId":null,"timestamp":"t"}')
    raw_lines.insert(6, json.dumps(json.loads(raw_lines[1])).encode())  # duplicate id
    damaged = b"\n".join(raw_lines)
    path.write_bytes(damaged)

    with Ledger.open(path) as ledger:
        report = ledger.load_report
        skipped = [(i.line_number, i.action) for i in report.issues if i.action == "skipped"]
        assert skipped == [(3, "skipped"), (5, "skipped"), (6, "skipped"), (7, "skipped")]
        reasons = {i.line_number: i.reason for i in report.issues}
        assert "UTF-8" in reasons[3] or "JSON" in reasons[3]
        assert reasons[5] == "not valid JSON"
        assert "message" in reasons[6]
        assert "duplicate" in reasons[7]
        # entry 3 (the tool result) lost its parent: it is attached to the entry before it
        [reattached] = [i for i in report.issues if i.action == "reattached"]
        assert reattached.line_number == 4
        ids = [e.id for e in ledger.tree.entries]
        assert ids == [entries[0].id, entries[2].id, entries[3].id]
        assert ledger.tree.get(entries[2].id).parent_id == entries[0].id  # type: ignore[union-attr]
        assert [e.id for e in ledger.tree.branch()] == ids
        ledger.append_message(user("more"))
    # the damaged part of the file is untouched; the new line follows it
    assert path.read_bytes().startswith(damaged)


def test_unknown_entry_types_are_kept_and_the_tree_goes_through_them(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    entries = build(path)
    future = {
        "type": "bookmark",
        "id": "b0000001",
        "parentId": entries[-1].id,
        "timestamp": "2030-01-01T00:00:00.000Z",
        "label": {"nested": [1, 2]},
    }
    line = json.dumps(future, separators=(",", ":")).encode()
    with path.open("ab") as handle:
        handle.write(line + b"\n")
    with Ledger.open(path) as ledger:
        # Reported like every other line this version cannot use (it was silently dropped
        # from view), and kept: the tree goes through it.
        (issue,) = ledger.load_report.issues
        assert (issue.line_number, issue.action) == (len(entries) + 2, "unknownType")
        assert "'bookmark'" in issue.reason
        assert f"line {len(entries) + 2} kept but not shown" in ledger.load_report.describe()
        assert ledger.tree.get("b0000001") == UnknownEntry(future)
        after = ledger.append_message(user("next"))
        assert after.parent_id == "b0000001"
    assert line + b"\n" in path.read_bytes()
    contents = read_ledger(path)
    assert contents.entries[-2] == UnknownEntry(future)


def test_read_ledger_does_not_repair(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    build(path)
    torn = path.read_bytes()[:-10]
    path.write_bytes(torn)
    contents = read_ledger(path)
    assert len(contents.entries) == 3
    assert contents.report.truncated_bytes > 0
    assert path.read_bytes() == torn


def test_tool_calls_left_running_get_an_aborted_result_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    with Ledger.create(path, session_id="s1", workspace="/w", fsync="never") as ledger:
        ledger.append_message(user("look around"))
        asked = ledger.append_message(
            assistant("", call("c1", "read", path="a"), call("c2", "bash", command="make"))
        )
        ledger.append_message(result("c1", "contents of a"))
        # the process dies here, while c2 runs
    before = path.read_bytes()
    with Ledger.open(path, fsync="never") as ledger:
        report = ledger.load_report
        assert report.aborted_tool_calls == ("c2",)
        assert not report.clean
        assert "1 tool call left running when the server stopped marked as aborted" in (
            report.describe()
        )
        last = ledger.tree.entries[-1]
        assert isinstance(last, MessageEntry) and last.message.role == "toolResult"
        assert last.message.tool_call_id == "c2" and last.message.is_error
        assert "may or may not have run" in last.message.content[0].text  # type: ignore[union-attr]
        assert asked.id in ledger.tree
    after = path.read_bytes()
    assert after.startswith(before), "append-only: nothing before the repair was rewritten"
    assert after.count(b"\n") == before.count(b"\n") + 1
    # The repaired file is consistent alone: opening it again finds nothing to do.
    with Ledger.open(path, fsync="never") as again:
        assert again.load_report.clean
        assert len(again.tree.entries) == 4


def test_a_finished_or_rewound_branch_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    with Ledger.create(path, session_id="s1", workspace="/w", fsync="never") as ledger:
        first = ledger.append_message(user("one"))
        ledger.append_message(assistant("", call("c1")))
        ledger.append_message(result("c1", "ok"))
        ledger.append_message(assistant("done"))
        ledger.rewind(first.id)  # the leaf is a branch entry, not a message
    size = path.stat().st_size
    with Ledger.open(path, fsync="never") as ledger:
        assert ledger.load_report.clean
    assert path.stat().st_size == size


def test_a_corrupt_line_and_a_repair_are_described(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    build(path)
    lines = path.read_bytes().split(b"\n")
    lines[2] = b'{"type": "message", broken'
    path.write_bytes(b"\n".join(lines)[:-10])  # and tear the last line
    with Ledger.open(path, fsync="never") as ledger:
        text = ledger.load_report.describe()
    assert text.startswith("The session was repaired when it was opened: line 3 skipped")
    assert "an incomplete last line (line 5," in text
    assert "entries kept (skipped lines stay in the file)." in text
