"""The transcript an editor shows: the current branch as the same items the live stream sends.

A live turn sends `agent/update` notifications whose `update` is one of the items built here
(`user_message_item`, `chunk_item`, `tool_call_item`, `tool_call_update_item`, `notice_item`,
`plan_item`, `pins_item`);
a loaded session is the same items made from its ledger entries, plus markers the live stream
announces by other means (`compaction`, `branch`, `modelChange`, `fileRestore`). An editor
therefore has one code path for both, and never reads ledger entries. docs/protocol.md
defines every item.

Paging walks parent links from the leaf (or from a cursor) through the ledger's index, so a
page costs its own size whatever the length of the session: `page(ledger, tools)` is the
latest page, `page(ledger, tools, before=cursor)` the one before a cursor. A cursor is the id
of the first entry of the page it came with; a page never starts with a tool result (its call
would be on the page before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_server.context.summary_prompt import note_text
from agent_server.errors import EntryNotFoundError
from agent_server.llm.messages import (
    AssistantMessage,
    Attachment,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    attachment_to_json,
    content_to_json,
)
from agent_server.session import facts as kinds
from agent_server.session.entries import (
    BranchEntry,
    CompactionEntry,
    Entry,
    FileRestoreEntry,
    FileVersion,
    MessageEntry,
    ModelChangeEntry,
    Pin,
    PlanEntry,
    PlanItem,
    plan_item_to_json,
)

if TYPE_CHECKING:  # the live stream uses the item builders without loading every tool
    from agent_server.agent.tools import Tool
    from agent_server.session.ledger import Ledger

DEFAULT_PAGE = 100  # entries per page unless the editor asks otherwise
# Entry kinds an editor shows (system prompts, titles and unknown future types are not).
SHOWN = frozenset("".join((kinds.USER, kinds.ASSISTANT, kinds.TOOL_RESULT, kinds.COMPACTION)))
SHOWN |= {kinds.BRANCH, kinds.MODEL_CHANGE, kinds.FILE_RESTORE, kinds.PLAN}

Item = dict[str, Any]
# The items that carry a piece of an answer's text (`chunk_item`).
CHUNK_KINDS = frozenset(("messageChunk", "thoughtChunk"))
_JSON_TYPES = (str, int, float, bool, list, dict)


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Item]
    cursor: str | None  # pass as `before` for the page before this one; None: at the start


# --- the items, live and loaded -----------------------------------------------------------------


def user_message_item(
    entry_id: str,
    parent_id: str | None,
    content: Iterable[UserContent],
    attachments: Iterable[Attachment] = (),
) -> Item:
    """A prompt: what the user typed or pasted (`content`), and what its @-mentions attached
    (`attachments`: path, kind, detail; the attached text itself is for the model)."""
    item: Item = {
        "kind": "userMessage",
        "entryId": entry_id,
        "parentId": parent_id,
        "content": [content_to_json(block) for block in content],
    }
    shown = [attachment_to_json(a) for a in attachments]
    if shown:
        item["attachments"] = [{k: v for k, v in a.items() if k != "blocks"} for a in shown]
    return item


def chunk_item(kind: str, message_id: str, text: str) -> Item:
    """`messageChunk` or `thoughtChunk`; `messageId` is the id of the ledger entry the answer
    is recorded as."""
    return {"kind": kind, "messageId": message_id, "content": {"type": "text", "text": text}}


def describe_call(call: ToolCall, tool: Tool | None) -> tuple[str, str, tuple[str, ...]]:
    """A tool call's title ("Read README.md"), kind and paths, as its tool describes them."""
    if tool is None:
        return call.name, "other", ()
    return tool.title(call.arguments), tool.kind, tool.paths(call.arguments)


def tool_call_item(call: ToolCall, title: str, kind: str, paths: Iterable[str]) -> Item:
    """A tool call as the model asked for it, before it runs."""
    return {
        "kind": "toolCall",
        "toolCallId": call.id,
        "title": title,
        "toolKind": kind,
        "status": "pending",
        "rawInput": dict(call.arguments),
        "locations": [{"path": path} for path in paths],
    }


def tool_call_update_item(
    tool_call_id: str,
    status: str,
    output: str | None = None,
    details: Mapping[str, Any] | None = None,
    images: Sequence[ImageContent] = (),
) -> Item:
    """A tool call's progress or result: its status, the text the model got back and the
    images (an MCP tool's screenshot; a write's or edit's file change as `diff` content), and
    what else the tool reported for the editor only (`rawOutput`: line ranges, counts, ...)."""
    item: Item = {"kind": "toolCallUpdate", "toolCallId": tool_call_id, "status": status}
    content: list[Item] = []
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
        content.append(dict(change))
    if content:
        item["content"] = content
    raw = json_details({k: v for k, v in details.items() if k != "change"})
    if raw:
        item["rawOutput"] = raw
    return item


def notice_item(level: str, message: str) -> Item:
    return {"kind": "notice", "level": level, "message": message}


def plan_item(items: Iterable[PlanItem]) -> Item:
    """The task's plan as the model last wrote it (the whole list)."""
    return {"kind": "plan", "entries": [plan_item_to_json(item) for item in items]}


def pin_json(pin: Pin) -> Item:
    return {"id": pin.id, "kind": pin.kind, "text": pin.text, "by": pin.by}


def pins_item(pins: Iterable[Pin]) -> Item:
    """The pins in force after one was added or removed."""
    return {"kind": "pins", "pins": [pin_json(pin) for pin in pins]}


def compaction_item(entry: CompactionEntry) -> Item:
    """A compaction marker: the fields of a completed `agent/compaction`, and the entry."""
    item: Item = {
        "kind": "compaction",
        "entryId": entry.id,
        "status": "completed",
        "reason": entry.reason,
        "tokensBefore": entry.tokens_before,
        "summary": entry.summary,
        "firstKeptEntryId": entry.first_kept_entry_id,
    }
    if entry.tokens_after is not None:
        item["tokensAfter"] = entry.tokens_after
    return item


def json_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON values of a tool's details (anything else is left out)."""
    return {k: v for k, v in details.items() if v is None or isinstance(v, _JSON_TYPES)}


def entry_items(entry: Entry, tools: Mapping[str, Tool]) -> list[Item]:
    """The items one ledger entry shows as (none for what an editor does not show)."""
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, UserMessage):
            if message.note is not None:  # the editor's note (an external edit, a branch
                # summary), not something the user typed: shown as the live notice was
                item = notice_item("info", note_text(message))
                return [{**item, "entryId": entry.id, "note": message.note}]
            return [
                user_message_item(entry.id, entry.parent_id, message.typed, message.attachments)
            ]
        if isinstance(message, AssistantMessage):
            return _assistant_items(entry.id, message, tools)
        assert isinstance(message, ToolResultMessage)
        return [
            tool_call_update_item(
                message.tool_call_id,
                "failed" if message.is_error else "completed",
                message.text,
                message.details,
                [block for block in message.content if isinstance(block, ImageContent)],
            )
        ]
    if isinstance(entry, CompactionEntry):
        return [compaction_item(entry)]
    if isinstance(entry, BranchEntry):
        item = {"kind": "branch", "entryId": entry.id, "targetId": entry.target_id}
        if entry.summary is not None:
            item["summary"] = entry.summary
        return [item]
    if isinstance(entry, ModelChangeEntry):
        change = {
            "kind": "modelChange",
            "entryId": entry.id,
            "provider": entry.provider,
            "model": entry.model,
        }
        if entry.thinking is not None:
            change["thinking"] = entry.thinking
        return [change]
    if isinstance(entry, FileRestoreEntry):
        return [file_restore_item(entry.id, entry.target_id, entry.files)]
    if isinstance(entry, PlanEntry):
        return [plan_item(entry.items)]
    return []


def file_restore_item(entry_id: str, target_id: str, files: Iterable[FileVersion]) -> Item:
    """Files put back by a rewind: each restored, or deleted (it did not exist then)."""
    return {
        "kind": "fileRestore",
        "entryId": entry_id,
        "targetId": target_id,
        "files": [
            {"path": v.path, "action": "delete" if v.after is None else "restore"} for v in files
        ],
    }


def _assistant_items(
    entry_id: str, message: AssistantMessage, tools: Mapping[str, Tool]
) -> list[Item]:
    items: list[Item] = []
    thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingContent))
    if thinking:
        items.append(chunk_item("thoughtChunk", entry_id, thinking))
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    if text:
        items.append(chunk_item("messageChunk", entry_id, text))
    for call in message.tool_calls:
        items.append(tool_call_item(call, *describe_call(call, tools.get(call.name))))
    if message.error_message:
        items.append(notice_item("error", message.error_message))
    elif message.stop_reason == "aborted":
        items.append(notice_item("info", "Interrupted: the answer stops where it was cut."))
    return items


# --- pages --------------------------------------------------------------------------------------


def page(
    ledger: Ledger,
    tools: Sequence[Tool],
    *,
    before: str | None = None,
    limit: int = DEFAULT_PAGE,
) -> Page:
    """Up to `limit` shown entries of the current branch as items, oldest first: the latest
    ones, or (`before`, a cursor) those on the path leading to that entry, before it."""
    if before is not None and before not in ledger:
        raise EntryNotFoundError(
            f"no entry {before} in session {ledger.session_id}: the cursor is not from this session"
        )
    ids: list[str] = []
    oldest = ""
    reached_root = True
    for entry_id, kind in ledger.walk_back(before):
        if entry_id == before or kind not in SHOWN:
            continue
        if len(ids) >= limit and oldest != kinds.TOOL_RESULT:
            reached_root = False
            break
        ids.append(entry_id)
        oldest = kind
    ids.reverse()
    by_name = {tool.spec.name: tool for tool in tools}
    items = [item for entry in ledger.read(ids) for item in entry_items(entry, by_name)]
    cursor = None if reached_root or not ids else ids[0]
    return Page(items, cursor)
