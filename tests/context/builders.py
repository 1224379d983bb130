"""Small message and entry builders for the context tests."""

from __future__ import annotations

from agent_server.session.entries import CompactionEntry, MessageEntry
from tests.session.builders import assistant, call, result, user

__all__ = ["assistant", "call", "compaction", "entries_of", "result", "user"]


def entries_of(*messages: object, start: int = 0) -> list[MessageEntry]:
    """A linear path of message entries with ids m0, m1, ..."""
    out: list[MessageEntry] = []
    parent: str | None = None
    for index, message in enumerate(messages, start):
        entry = MessageEntry(f"m{index}", parent, "2025-01-01T00:00:00.000Z", message)  # type: ignore[arg-type]
        out.append(entry)
        parent = entry.id
    return out


def compaction(
    entry_id: str,
    parent: str | None,
    first_kept: str | None,
    summary: str = "SUMMARY",
    split: str | None = None,
) -> CompactionEntry:
    return CompactionEntry(
        entry_id,
        parent,
        "2025-01-01T00:00:00.000Z",
        summary=summary,
        first_kept_entry_id=first_kept,
        tokens_before=1000,
        tokens_after=100,
        reason="threshold",
        split_turn_summary=split,
    )
