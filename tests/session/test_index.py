"""The ledger's index: opening through it gives exactly what a full parse of the file gives,
whether its sidecar is fresh, missing, stale, damaged, or behind what another program appended."""

from __future__ import annotations

import base64
import json
import os
import tracemalloc
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_server.context.projection import project
from agent_server.errors import SessionError
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agent_server.session.entries import (
    CompactionEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    SystemPromptEntry,
    TitleEntry,
    ToolListEntry,
    UnknownEntry,
    entry_from_json,
    entry_to_json,
)
from agent_server.session.facts import facts_of, message_facts
from agent_server.session.index import index_path_for
from agent_server.session.ledger import Ledger
from agent_server.session.ledger_file import encode_line, read_ledger

from .builders import assistant, call, result, user


def fill(ledger: Ledger, turns: int, start: int = 0) -> None:
    for n in range(start, start + turns):
        ledger.append_message(user(f"prompt {n}"))
        ledger.append_message(assistant(f"reading {n}", call(f"c{n}", "read", path=f"f{n}.py")))
        ledger.append_message(result(f"c{n}", f"contents of f{n}.py " * 5))
        ledger.append_message(assistant(f"answer {n}"))


def expected(path: Path) -> tuple[list[Entry], list[Entry]]:
    """All entries and the current branch, from a full parse of the file."""
    contents = read_ledger(path)
    return list(contents.entries), contents.branch()


def assert_matches_file(ledger: Ledger) -> None:
    entries, branch = expected(ledger.path)
    assert list(ledger.tree.entries) == entries
    assert ledger.tree.branch() == branch
    assert ledger.entry_count == len(entries)
    assert ledger.leaf_id == (entries[-1].id if entries else None)
    assert ledger.tree.projection_entries() == ledger.tree.branch()[-len(ledger.tree.projection_entries()) :]


def test_the_index_is_stored_beside_the_ledger_and_used_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 3)
    sidecar = index_path_for(path)
    stored = json.loads(sidecar.read_bytes())
    assert stored["sizeBytes"] == path.stat().st_size
    assert len(stored["ids"]) == 12
    with Ledger.open(path, fsync="never") as ledger:
        assert_matches_file(ledger)
        assert ledger.load_report.clean


def test_a_missing_or_unreadable_index_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 3)
    for damage in (None, b"{not json", b'{"version": 1}', b'{"version": 99}'):
        sidecar = index_path_for(path)
        if damage is None:
            sidecar.unlink()
        else:
            sidecar.write_bytes(damage)
        with Ledger.open(path, fsync="never") as ledger:
            assert_matches_file(ledger)
        assert json.loads(sidecar.read_bytes())["sizeBytes"] == path.stat().st_size


def test_an_index_whose_arrays_lie_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 2)
    sidecar = index_path_for(path)
    good = json.loads(sidecar.read_bytes())
    parents = array("q", base64.b64decode(good["parents"]))  # little-endian on disk
    parents[0] = 5  # a parent after its child
    lies = [
        {**good, "parents": base64.b64encode(parents.tobytes()).decode()},
        {**good, "offsets": base64.b64encode(b"\x00" * 8).decode()},  # one entry, not eight
        {**good, "lengths": "not base64!"},
        {**good, "parents": list(parents)},  # the form of version 5
    ]
    for stored in lies:
        sidecar.write_text(json.dumps(stored))
        with Ledger.open(path, fsync="never") as ledger:
            assert_matches_file(ledger)


def test_a_ledger_edited_by_another_program_is_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 3)
    lines = path.read_bytes().split(b"\n")
    # Another program rewrites an early answer (longer) and drops the last turn.
    data = json.loads(lines[4])
    data["message"]["content"][0]["text"] = "an answer edited by hand, much longer than before"
    lines[4] = json.dumps(data).encode()
    path.write_bytes(b"\n".join(lines[:-5]) + b"\n")
    with Ledger.open(path, fsync="never") as ledger:
        assert_matches_file(ledger)
        assert ledger.entry_count == 8
        edited = ledger.tree.entries[3]
        assert "edited by hand" in edited.message.text  # type: ignore[union-attr]


def test_lines_appended_by_another_program_while_closed_are_folded_in(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 2)
        leaf = ledger.leaf_id
    stored_size = json.loads(index_path_for(path).read_bytes())["sizeBytes"]
    extra = {"type": "title", "id": "feed0001", "parentId": leaf, "timestamp": "t", "title": "X"}
    with path.open("ab") as handle:
        handle.write(encode_line(extra))
    with Ledger.open(path, fsync="never") as ledger:
        assert_matches_file(ledger)
        assert ledger.facts.title == "X"
        assert ledger.leaf_id == "feed0001"
    assert json.loads(index_path_for(path).read_bytes())["sizeBytes"] > stored_size


def test_lines_appended_by_another_program_while_open_are_indexed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 1)
        foreign = {
            "type": "title",
            "id": "feed0002",
            "parentId": ledger.leaf_id,
            "timestamp": "t",
            "title": "From elsewhere",
        }
        with path.open("ab") as handle:
            handle.write(encode_line(foreign))
        mine = ledger.append_message(user("mine"))
        assert "feed0002" in ledger.tree
        assert ledger.facts.title == "From elsewhere"
        assert ledger.tree.get(mine.id) == mine
        assert_matches_file(ledger)
    with Ledger.open(path, fsync="never") as ledger:
        assert_matches_file(ledger)


def test_an_unfinished_line_another_program_appended_does_not_swallow_the_next_entry(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 1)
        with path.open("ab") as handle:
            handle.write(b'{"type":"garb')  # no newline: the next write would continue it
        mine = ledger.append_message(user("mine"))
        after = ledger.append_message(assistant("after mine"))
        assert ledger.tree.get(mine.id) == mine
        assert_matches_file(ledger)
    index_path_for(path).unlink()  # a full parse agrees
    with Ledger.open(path, fsync="never") as ledger:
        assert ledger.tree.get(mine.id) == mine and ledger.leaf_id == after.id
        assert [issue.reason for issue in ledger.load_report.issues] == ["not valid JSON"]
        assert_matches_file(ledger)


def test_a_crash_after_the_index_was_stored_loses_nothing(tmp_path: Path) -> None:
    """The sidecar is behind; the file has more complete lines and then a torn one."""
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 2)
    saved_index = index_path_for(path).read_bytes()
    with Ledger.open(path, fsync="never") as ledger:
        fill(ledger, 2, start=2)
        last = ledger.leaf_id
    index_path_for(path).write_bytes(saved_index)  # as if the process died before storing it
    with path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"torn","parentId":"')
    with Ledger.open(path, fsync="never") as ledger:
        assert [i.action for i in ledger.load_report.issues] == ["truncated"]
        assert ledger.leaf_id == last
        assert ledger.entry_count == 16
        assert_matches_file(ledger)
    with Ledger.open(path, fsync="never") as ledger:
        assert ledger.load_report.clean


def test_corrupt_lines_stay_reported_when_opened_through_the_index(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 2)
    lines = path.read_bytes().split(b"\n")
    lines.insert(3, b"not json at all")
    path.write_bytes(b"\n".join(lines))
    for _ in range(2):  # rebuilt, then from the sidecar
        with Ledger.open(path, fsync="never") as ledger:
            assert [(i.line_number, i.action) for i in ledger.load_report.issues] == [
                (4, "skipped")
            ]
            assert_matches_file(ledger)


def test_a_ledger_rewritten_while_open_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 3)
    with Ledger.open(path, fsync="never") as ledger:
        first = ledger.tree.branch_ids()[0]
        lines = path.read_bytes().split(b"\n")
        os.truncate(path, 0)
        with path.open("ab") as handle:
            handle.write(b"\n".join([lines[0], lines[2], lines[1], *lines[3:]]))
        with pytest.raises(SessionError, match="changed by another program"):
            ledger.tree.get(first)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(1, 3)),
        st.tuples(st.just("rewind"), st.integers(0, 50)),
        st.tuples(st.just("compact"), st.integers(0, 50)),
        st.tuples(st.just("reopen"), st.sampled_from(["keep", "drop", "stale"])),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=operations)
def test_any_history_opens_to_what_the_file_says(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object]]
) -> None:
    path = tmp_path_factory.mktemp("prop") / "s.jsonl"
    ledger = Ledger.create(path, session_id="s", workspace="/w", fsync="never")
    turns = 0
    try:
        for op, arg in steps:
            if op == "turn":
                assert isinstance(arg, int)
                fill(ledger, arg, start=turns)
                turns += arg
            elif op == "rewind" and ledger.entry_count:
                assert isinstance(arg, int)
                ledger.rewind(ledger.tree.entries[arg % ledger.entry_count].id)
            elif op == "compact" and ledger.entry_count:
                assert isinstance(arg, int)
                branch = ledger.tree.branch_ids()
                ledger.add(
                    CompactionEntry,
                    summary="S",
                    first_kept_entry_id=branch[arg % len(branch)],
                    tokens_before=100,
                    reason="manual", tokens_after=None,
                )
            elif op == "reopen":
                ledger.close()
                sidecar = index_path_for(path)
                if arg == "drop":
                    sidecar.unlink(missing_ok=True)
                elif arg == "stale" and sidecar.exists():
                    stored = json.loads(sidecar.read_bytes())
                    stored["tailDigest"] = "0" * 16
                    sidecar.write_text(json.dumps(stored))
                ledger = Ledger.open(path, fsync="never")
            assert_matches_file(ledger)
    finally:
        ledger.close()
    with Ledger.open(path, fsync="never") as reopened:
        assert_matches_file(reopened)


def test_the_latest_system_prompt_and_tool_list_are_found_through_the_index(tmp_path: Path) -> None:
    from agent_server.llm.messages import ToolSpec

    path = tmp_path / "s.jsonl"
    first = (ToolSpec("read", "Read a file.", {"type": "object"}),)
    second = (*first, ToolSpec("mcp__db__query", "Query the database.", {"type": "object"}))
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        ledger.add(SystemPromptEntry, "You are helpful.")
        ledger.add(ToolListEntry, first)
        fill(ledger, 2)
        ledger.add(ToolListEntry, second, reason="accepted")
        fill(ledger, 1, start=2)
    stored = json.loads(index_path_for(path).read_bytes())
    assert stored["toolList"] >= 0 and stored["systemPrompt"] >= 0
    for sidecar in (True, False):  # through the stored index, then rebuilt from the file
        if not sidecar:
            index_path_for(path).unlink()
        with Ledger.open(path, fsync="never") as ledger:
            assert ledger.facts.system_prompt() == "You are helpful."
            listed = ledger.facts.tool_list()
            assert listed is not None and listed.tools == second and listed.reason == "accepted"


def test_the_last_call_that_used_the_cache_is_found_through_the_index(tmp_path: Path) -> None:
    from agent_server.session.entries import timestamp_seconds

    path = tmp_path / "s.jsonl"
    now = [1_800_000_000.0]
    with Ledger.create(
        path, session_id="s", workspace="/w", fsync="never", clock=lambda: now[0]
    ) as ledger:
        assert ledger.facts.last_call is None
        fill(ledger, 1)  # answers that do not say how they used the cache
        assert ledger.facts.last_call is None
        now[0] += 60
        ledger.append_message(assistant("cached"), cache_retention="long")
        now[0] += 60
        ledger.append_message(assistant("cut off by a cancel"))  # recorded no retention
        ledger.append_message(user("later"))
    stored = json.loads(index_path_for(path).read_bytes())
    assert stored["lastCall"] == 4
    for sidecar in (True, False):  # through the stored index, then rebuilt from the file
        if not sidecar:
            index_path_for(path).unlink()
        with Ledger.open(path, fsync="never") as ledger:
            last = ledger.facts.last_call
            assert last is not None and last.cache_retention == "long"
            assert timestamp_seconds(last.timestamp) == 1_800_000_060.0
    assert '"cacheRetention":"long"' in path.read_text("utf-8").replace(" ", "")


def test_an_index_of_the_previous_version_is_rebuilt_with_the_last_call(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        ledger.append_message(user("hi"))
        ledger.append_message(assistant("hello"), cache_retention="short")
    sidecar = index_path_for(path)
    stored = json.loads(sidecar.read_bytes())
    del stored["lastCall"]
    stored["version"] = 3
    sidecar.write_text(json.dumps(stored), "utf-8")
    with Ledger.open(path, fsync="never") as ledger:
        last = ledger.facts.last_call
        assert last is not None and last.cache_retention == "short"


# --- the rebuild: facts read from lines, one streaming pass ------------------------------------

texts = st.text(max_size=30)
usages = st.builds(Usage, st.integers(0, 10**6), st.integers(0, 10**5), st.integers(0, 10**6))
messages = st.one_of(
    st.builds(
        UserMessage,
        st.lists(st.builds(TextContent, texts), max_size=3).map(tuple),
        note=st.none() | st.just("externalEdit"),
    ),
    st.builds(
        lambda text, calls, usage, model: assistant(text, *calls, usage=usage, model=model),
        texts,
        st.lists(st.builds(call, st.text("abc", min_size=1, max_size=5)), max_size=2),
        st.none() | usages,
        st.sampled_from(["", "sim-large", "gpt-5.5"]),
    ),
    st.builds(result, st.text("abc", min_size=1, max_size=5), texts),
)


@settings(max_examples=200, deadline=None)
@given(message=messages, retention=st.none() | st.sampled_from(["short", "long", "none"]))
def test_a_message_line_gives_the_facts_of_its_entry(
    message: UserMessage | AssistantMessage | ToolResultMessage, retention: str | None
) -> None:
    """What a rebuild reads from a message's line without building it is what the index
    keeps of the entry appended (the one fold, two readers)."""
    entry = MessageEntry("e1", None, "2026-01-01T00:00:00.000Z", message, retention)  # type: ignore[arg-type]
    line = json.loads(encode_line(entry_to_json(entry)))
    assert message_facts(line) == facts_of(entry_from_json(line)) == facts_of(entry)


def test_a_rebuilt_index_folds_what_the_appends_folded(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        ledger.add(ModelChangeEntry, "anthropic-messages", "sim-large")
        fill(ledger, 2)
        ledger.add(TitleEntry, "a title")
        ledger.append_message(UserMessage((TextContent("edited"),), note="externalEdit"))
        ledger.append_message(assistant("ok", usage=Usage(10, 5, 100, 3), model="sim-small"),
                              cache_retention="long")
        prompt = ledger.append_message(user("withdrawn"))
        ledger.rewind(prompt.parent_id)
        appended = (ledger.facts.meta, ledger.facts.usage, ledger.facts.last_call, ledger.facts.model_change)
    index_path_for(path).unlink()
    with Ledger.open(path, fsync="never") as ledger:
        assert (ledger.facts.meta, ledger.facts.usage, ledger.facts.last_call, ledger.facts.model_change) == appended
        assert ledger.facts.meta.first_prompt == "prompt 0" and ledger.facts.meta.prompt_count == 2


def test_a_message_this_version_cannot_read_is_kept_in_the_tree_and_not_shown(
    tmp_path: Path,
) -> None:
    """A rebuild reads a message's envelope, not its blocks: a block of a kind this version
    does not know (a newer agent-server's) is found when the entry is read, and the entry is
    then kept in the tree, not shown, as an entry of an unknown type is; the session opens."""
    path = tmp_path / "s.jsonl"
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        fill(ledger, 1)
        future = ledger.append_message(user("with audio"))
        ledger.append_message(assistant("heard it"))
    lines = path.read_bytes().split(b"\n")
    data = json.loads(lines[5])
    assert data["id"] == future.id
    data["message"]["content"].append({"type": "audio", "data": "AAAA"})
    lines[5] = json.dumps(data).encode()
    path.write_bytes(b"\n".join(lines))
    index_path_for(path).unlink()
    with Ledger.open(path, fsync="never") as ledger:
        branch = ledger.tree.branch()
        assert [e.id for e in branch] == ledger.tree.branch_ids()  # the tree goes through it
        kept = ledger.tree.get(future.id)
        assert isinstance(kept, UnknownEntry) and kept.raw == data
        shown = project(ledger.tree.projection_entries()).messages
        assert [m.role for m in shown] == ["user", "assistant", "toolResult", "assistant",
                                           "assistant"]
        # Reported, once, with its line, as every line loading cannot use is.
        [issue] = ledger.load_report.issues
        assert (issue.line_number, issue.action) == (6, "unknownType")
        assert "audio" in issue.reason
        assert "line 6 kept but not shown" in ledger.load_report.describe()


def test_a_rebuild_holds_a_block_and_the_index_not_the_file(tmp_path: Path) -> None:
    """The index is rebuilt in one pass over the file, a block at a time: the memory it
    takes does not grow with the size of the entries (here 30 MB of tool output)."""
    path = tmp_path / "s.jsonl"
    output = "x = 1  # a line of a large file\n" * 6_000  # ~190 kB a tool result
    with Ledger.create(path, session_id="s", workspace="/w", fsync="never") as ledger:
        for n in range(160):
            ledger.append_message(user(f"read part {n}"))
            ledger.append_message(assistant("", call(f"c{n}", "read", path=f"f{n}.py")))
            ledger.append_message(result(f"c{n}", output))
    assert path.stat().st_size > 30e6
    index_path_for(path).unlink()
    tracemalloc.start()
    try:
        with Ledger.open(path, fsync="never") as ledger:
            _, peak = tracemalloc.get_traced_memory()
            assert ledger.entry_count == 480
    finally:
        tracemalloc.stop()
    # A block (1 MB) and its lines, one line's objects, the index of 480 entries: a few MB
    # (reading 8 MB blocks, copied three times over, it was 40 MB).
    assert peak < 12e6, peak
