from __future__ import annotations

import json

import pytest

from agent_server.errors import LedgerFormatError
from agent_server.llm.messages import Usage
from agent_server.session.entries import (
    BranchEntry,
    CompactionDetails,
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SystemPromptEntry,
    TitleEntry,
    UnknownEntry,
    entry_from_json,
    entry_to_json,
    header_from_json,
    header_to_json,
    timestamp_seconds,
    utc_timestamp,
)

from .builders import assistant, call, result, user

TS = "2025-01-31T12:00:00.000Z"

ENTRIES = [
    MessageEntry("a1", None, TS, user("hello é \u2028 line")),
    MessageEntry(
        "a2",
        "a1",
        TS,
        assistant("reading", call("c1", "read", path="x.py"), usage=Usage(input=10, output=5)),
        cache_retention="long",
    ),
    MessageEntry("a3", "a2", TS, result("c1", "contents", error=True)),
    CompactionEntry(
        "a4",
        "a3",
        TS,
        summary="## Goal\nfix it",
        first_kept_entry_id="a2",
        tokens_before=1000,
        tokens_after=200,
        reason="threshold",
        details=CompactionDetails(("a.py",), ("b.py",)),
        split_turn_summary="early part",
        model="sim-small",
    ),
    CompactionEntry("a5", "a4", TS, "s", None, 10, None, "manual"),
    ModelChangeEntry("a6", "a5", TS, provider="anthropic", model="claude-sonnet-4-6"),
    BranchEntry("a7", "a2", TS, target_id="a2", summary="abandoned"),
    BranchEntry("a8", None, TS, target_id=None),
    TitleEntry("a9", "a8", TS, title="Fix the parser"),
    SystemPromptEntry("b1", "a9", TS, text="You are a coding agent.\nBe brief."),
]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: type(e).__name__)
def test_every_entry_type_round_trips_through_json(entry: object) -> None:
    data = entry_to_json(entry)  # type: ignore[arg-type]
    assert entry_from_json(json.loads(json.dumps(data))) == entry


def test_json_is_camel_case_with_common_fields() -> None:
    data = entry_to_json(ENTRIES[3])
    assert data["type"] == "compaction"
    assert {"id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore"} <= set(
        data
    )
    assert data["details"] == {"readFiles": ["a.py"], "modifiedFiles": ["b.py"]}
    assert data["splitTurnSummary"] == "early part"
    assert entry_to_json(ENTRIES[5])["type"] == "modelChange"
    assert entry_to_json(ENTRIES[6])["targetId"] == "a2"
    assert entry_to_json(ENTRIES[0])["parentId"] is None


def test_header_shape() -> None:
    header = SessionHeader("s1", "/w", TS)
    data = header_to_json(header)
    assert data == {"type": "session", "version": 1, "id": "s1", "workspace": "/w", "createdAt": TS}
    assert header_from_json(data) == header
    with_model = SessionHeader("s1", "/w", TS, title="T", model="sim-small")
    assert header_to_json(with_model)["model"] == "sim-small"
    assert header_from_json(header_to_json(with_model)) == with_model
    with pytest.raises(LedgerFormatError):
        header_from_json({"type": "message"})


def test_unknown_types_are_kept_verbatim() -> None:
    raw = {"type": "futureThing", "id": "z1", "parentId": "a1", "timestamp": TS, "x": [1, {"y": 2}]}
    entry = entry_from_json(raw)
    assert isinstance(entry, UnknownEntry)
    assert (entry.id, entry.parent_id, entry.type) == ("z1", "a1", "futureThing")
    assert entry_to_json(entry) == raw


@pytest.mark.parametrize(
    "data",
    [
        {"id": "x"},
        {"type": "message", "parentId": None, "timestamp": TS},
        {"type": "message", "id": "x", "parentId": None, "timestamp": TS},
        {"type": "message", "id": "x", "parentId": 3, "timestamp": TS, "message": {}},
        {"type": "title", "id": "x", "parentId": None, "timestamp": TS},
        {
            "type": "compaction",
            "id": "x",
            "parentId": None,
            "timestamp": TS,
            "summary": "s",
            "firstKeptEntryId": None,
            "tokensBefore": 1,
            "reason": "bored",
        },
        {"type": "futureThing", "parentId": None},
    ],
)
def test_malformed_entries_say_what_is_wrong(data: dict[str, object]) -> None:
    with pytest.raises(LedgerFormatError) as info:
        entry_from_json(data)
    assert info.value.message


def test_timestamps_are_utc_iso() -> None:
    stamp = utc_timestamp()
    assert stamp.endswith("Z")
    assert len(stamp) == len("2025-01-31T12:00:00.000Z")


def test_a_timestamp_reads_back_as_the_seconds_it_was_written_from() -> None:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(1_800_000_000.25, UTC)
    assert timestamp_seconds(utc_timestamp(moment)) == 1_800_000_000.25
    assert timestamp_seconds("yesterday") is None


def test_a_cache_retention_this_version_does_not_know_loads_as_unknown() -> None:
    data = entry_to_json(MessageEntry("a1", None, TS, assistant("hi"), cache_retention="short"))
    assert data["cacheRetention"] == "short"
    data["cacheRetention"] = "forever"
    loaded = entry_from_json(data)
    assert isinstance(loaded, MessageEntry) and loaded.cache_retention is None
    del data["cacheRetention"]
    assert entry_from_json(data) == MessageEntry("a1", None, TS, assistant("hi"))
