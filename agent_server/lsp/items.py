"""The editor protocol's translator of agent events: the `update` of an `agent/update`
notification, and the items of a loaded transcript, from the same events (agent/events.py).

A live turn's events and a stored session's (agent/transcript.py) go through `update_json`
alike, so an editor has one code path for both; a loaded transcript adds the markers the live
stream announces by other means (`compaction`, `branch`, `modelChange`, `fileRestore`).
docs/protocol.md defines every item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agent_server import protocol
from agent_server.agent.events import (
    AgentEvent,
    AnswerDiscarded,
    BranchTaken,
    CompactionFinished,
    FilesRestored,
    ModelChanged,
    ModelRecorded,
    Notice,
    PinsChanged,
    PlanUpdated,
    TextChunk,
    ThinkingChunk,
    ToolCallStarted,
    ToolCallUpdated,
    TurnStarted,
)
from agent_server.agent.transcript import json_details
from agent_server.llm.messages import ImageContent, attachment_to_json, content_to_json
from agent_server.session.entries import FileVersion, Pin, PlanItem, plan_item_to_json

if TYPE_CHECKING:
    from agent_server.llm.models import ModelInfo

# The items that carry a piece of an answer's text.
CHUNK_KINDS = frozenset(("messageChunk", "thoughtChunk"))


def update_json(event: AgentEvent) -> protocol.SessionUpdate | None:
    """The `update` of an agent/update notification, or None if the event is not one (it is
    sent by other means, or not at all)."""
    if isinstance(event, TurnStarted):
        return _user_message(event)
    if isinstance(event, TextChunk):
        return {"kind": "messageChunk", "messageId": event.message_id,
                "content": {"type": "text", "text": event.text}}
    if isinstance(event, ThinkingChunk):
        return {"kind": "thoughtChunk", "messageId": event.message_id,
                "content": {"type": "text", "text": event.text}}
    if isinstance(event, AnswerDiscarded):
        return {"kind": "messageDiscarded", "messageId": event.message_id}
    if isinstance(event, ToolCallStarted):
        call = event.tool_call
        return {
            "kind": "toolCall",
            "toolCallId": call.id,
            "title": event.title,
            "toolKind": cast(protocol.ToolKind, event.kind),
            "status": "pending",
            "rawInput": dict(call.arguments),
            "locations": [{"path": path} for path in event.locations],
        }
    if isinstance(event, ToolCallUpdated):
        return tool_call_update(
            event.tool_call_id, event.status, event.output, event.details, event.images
        )
    if isinstance(event, Notice):
        return _notice(event)
    if isinstance(event, ModelChanged):
        return {
            "kind": "modelChange",
            "entryId": event.entry_id,
            "provider": event.provider,
            "model": event.model.id,
            "thinking": event.thinking,
            "modelInfo": model_json(event.model),
            "note": event.note,
        }
    if isinstance(event, PlanUpdated):
        return {"kind": "plan", "entries": plan_json(event.items)}
    if isinstance(event, PinsChanged):
        return {"kind": "pins", "pins": pins_json(event.pins)}
    return None


def transcript_item(event: AgentEvent) -> protocol.TranscriptItem | None:
    """An event of a loaded transcript as its item: what the live update was, or a marker."""
    if isinstance(event, CompactionFinished):
        compaction: protocol.CompactionMarker = {
            "kind": "compaction",
            "entryId": event.compaction_id,
            "status": "completed",
            "reason": event.reason,
            "tokensBefore": event.tokens_before,
            "summary": event.summary or "",
            "firstKeptEntryId": event.first_kept_entry_id,
        }
        if event.tokens_after is not None:
            compaction["tokensAfter"] = event.tokens_after
        return compaction
    if isinstance(event, BranchTaken):
        branch: protocol.BranchMarker = {
            "kind": "branch", "entryId": event.entry_id, "targetId": event.target_id
        }
        if event.summary is not None:
            branch["summary"] = event.summary
        return branch
    if isinstance(event, ModelRecorded):
        change: protocol.ModelChangeMarker = {
            "kind": "modelChange",
            "entryId": event.entry_id,
            "provider": event.provider,
            "model": event.model_id,
        }
        if event.thinking is not None:
            change["thinking"] = cast(protocol.ThinkingLevel, event.thinking)
        return change
    if isinstance(event, FilesRestored):
        return {
            "kind": "fileRestore",
            "entryId": event.entry_id,
            "targetId": event.target_id,
            "files": restored_files(event.files),
        }
    return update_json(event)


def transcript_items(events: Iterable[AgentEvent]) -> list[protocol.TranscriptItem]:
    return [item for event in events if (item := transcript_item(event)) is not None]


def tool_call_update(
    tool_call_id: str,
    status: str,
    output: str | None = None,
    details: Mapping[str, Any] | None = None,
    images: Sequence[ImageContent] = (),
) -> protocol.ToolCallProgressUpdate:
    """A tool call's progress or result: its status, the text the model got back and the
    images (an MCP tool's screenshot; a write's or edit's file change as `diff` content), and
    what else the tool reported for the editor only (`rawOutput`: line ranges, counts, ...)."""
    item: protocol.ToolCallProgressUpdate = {
        "kind": "toolCallUpdate",
        "toolCallId": tool_call_id,
        "status": cast(protocol.ToolProgress, status),
    }
    content: list[protocol.ToolCallContent] = []
    if output is not None:
        content.append({"type": "content", "content": {"type": "text", "text": output}})
    content += [
        {"type": "content",
         "content": {"type": "image", "data": image.data, "mimeType": image.mime_type}}
        for image in images
    ]
    details = details or {}
    change = details.get("change")  # a write's or edit's file change: shown as a diff
    if isinstance(change, Mapping) and change.get("type") == "diff":
        content.append(cast(protocol.ToolCallDiffContent, dict(change)))
    if content:
        item["content"] = content
    raw = json_details({k: v for k, v in details.items() if k != "change"})
    if raw:
        item["rawOutput"] = raw
    return item


def pins_json(pins: Iterable[Pin]) -> list[protocol.PinInfo]:
    return [{"id": pin.id, "kind": pin.kind, "text": pin.text, "by": pin.by} for pin in pins]


def plan_json(items: Iterable[PlanItem]) -> list[protocol.PlanEntry]:
    return [cast(protocol.PlanEntry, plan_item_to_json(item)) for item in items]


def restored_files(files: Iterable[FileVersion]) -> list[protocol.RestoredFile]:
    """Files put back by a rewind: each restored, or deleted (it did not exist then)."""
    return [
        {"path": v.path, "action": "delete" if v.after is None else "restore"} for v in files
    ]


def model_json(model: ModelInfo) -> protocol.ModelRef:
    return {"id": model.id, "name": model.name, "contextWindow": model.context_window}


def _user_message(event: TurnStarted) -> protocol.UserMessageUpdate:
    """A prompt: what the user typed or pasted (`content`), and what its @-mentions attached
    (`attachments`: path, kind, detail; the attached text itself is for the model)."""
    item: protocol.UserMessageUpdate = {
        "kind": "userMessage",
        "entryId": event.entry_id,
        "parentId": event.parent_id,
        "content": cast(list[protocol.PromptBlock], [content_to_json(b) for b in event.content]),
    }
    shown = [attachment_to_json(a) for a in event.attachments]
    if shown:
        item["attachments"] = cast(
            list[protocol.PromptAttachment],
            [{k: v for k, v in a.items() if k != "blocks"} for a in shown],
        )
    return item


def _notice(event: Notice) -> protocol.NoticeUpdate:
    item: protocol.NoticeUpdate = {"kind": "notice", "level": event.level, "message": event.message}
    if event.retry is not None:
        retry = event.retry
        item["retry"] = {"attempt": retry.attempt, "attempts": retry.attempts, "wait": retry.wait}
    if event.entry_id is not None:
        item["entryId"] = event.entry_id
    if event.note is not None:
        item["note"] = event.note
    return item
