"""What a session list shows about a ledger, folded entry by entry.

The ledger keeps one `MetaFold` up to date as it appends; the store keeps a small sidecar
(`<id>.meta.json`) written from it, and rebuilds the same fold by scanning the file when the
sidecar is missing or stale. Both therefore agree on what the title, model and counts are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_server.session.entries import SessionHeader
from agent_server.session.facts import BRANCH, COMPACTION, MESSAGES, MODEL_CHANGE, TITLE, EntryFacts

FIRST_PROMPT_CHARS = 200
META_VERSION = 2  # 2: firstPrompt and promptCount

@dataclass(slots=True)
class MetaFold:
    """Title, model, last update, entry count, and the first prompt and number of prompts
    (which tell apart sessions with the same title, and show an empty one) of a ledger, as
    entries arrive."""

    title: str | None
    model: str | None
    updated_at: str
    entry_count: int = 0
    first_prompt: str | None = None
    prompt_count: int = 0
    # The latest prompt while nothing has answered it (its parent, whether it was the
    # first): a rewind to before it then withdraws it (a prompt refused unsent, too large
    # even alone). Entries about the session (tool list, title, model) answer nothing.
    _unanswered: tuple[str | None, bool] | None = None

    @classmethod
    def start(cls, header: SessionHeader) -> MetaFold:
        return cls(title=header.title, model=header.model, updated_at=header.created_at)

    def add(self, facts: EntryFacts) -> None:
        self.entry_count += 1
        if facts.timestamp:
            self.updated_at = facts.timestamp
        unanswered = self._unanswered
        kind = facts.kind
        if kind in MESSAGES or kind in (BRANCH, COMPACTION):
            self._unanswered = None
        if kind == BRANCH:
            if unanswered is not None and facts.target_id == unanswered[0]:
                self.prompt_count -= 1
                if unanswered[1]:
                    self.first_prompt = None
        elif kind == TITLE:
            self.title = facts.title
        elif kind == MODEL_CHANGE:
            self.model = facts.model
        elif facts.prompt is not None:
            self.prompt_count += 1
            first = self.first_prompt is None
            self._unanswered = (facts.parent_id, first)
            if first:
                self.first_prompt = " ".join(facts.prompt.split())[:FIRST_PROMPT_CHARS]
        elif facts.model:
            self.model = facts.model


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """The sidecar's content. `size_bytes`/`mtime_ns`/`tail_digest` say which state of the
    ledger it describes: `size_bytes` is always at a line boundary, and `tail_digest` hashes
    the bytes just before it, so that growth can be folded in without rereading the start."""

    session_id: str
    workspace: str
    created_at: str
    updated_at: str
    title: str | None
    model: str | None
    entry_count: int
    size_bytes: int
    mtime_ns: int
    tail_digest: str
    first_prompt: str | None = None
    prompt_count: int = 0


def meta_to_json(meta: SessionMeta) -> dict[str, Any]:
    return {
        "version": META_VERSION,
        "sessionId": meta.session_id,
        "workspace": meta.workspace,
        "createdAt": meta.created_at,
        "updatedAt": meta.updated_at,
        "title": meta.title,
        "model": meta.model,
        "entryCount": meta.entry_count,
        "sizeBytes": meta.size_bytes,
        "mtimeNs": meta.mtime_ns,
        "tailDigest": meta.tail_digest,
        "firstPrompt": meta.first_prompt,
        "promptCount": meta.prompt_count,
    }


def meta_from_json(data: Any) -> SessionMeta | None:
    """The sidecar's content, or None when it is not a sidecar this version wrote."""
    if not isinstance(data, dict) or data.get("version") != META_VERSION:
        return None
    try:
        title = data.get("title")
        model = data.get("model")
        first_prompt = data.get("firstPrompt")
        meta = SessionMeta(
            session_id=str(data["sessionId"]),
            workspace=str(data["workspace"]),
            created_at=str(data["createdAt"]),
            updated_at=str(data["updatedAt"]),
            title=title if isinstance(title, str) else None,
            model=model if isinstance(model, str) else None,
            entry_count=int(data["entryCount"]),
            size_bytes=int(data["sizeBytes"]),
            mtime_ns=int(data["mtimeNs"]),
            tail_digest=str(data["tailDigest"]),
            first_prompt=first_prompt if isinstance(first_prompt, str) else None,
            prompt_count=int(data["promptCount"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return meta
