"""The editor protocol's wire shapes: params read at the edge, results and notifications out.

Every custom request's params go through `Params`, which raises InvalidParams (-32602) with a
message naming the field and the problem. Agent errors become JSON-RPC errors with the codes
of docs/protocol.md. Everything sent is plain JSON in camelCase.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, get_args
from urllib.parse import unquote, urlparse

from agent_server import protocol
from agent_server.agent.events import (
    CompactionFinished,
    CompactionStarted,
    ContextDecided,
    OverflowHappened,
    UsageSnapshot,
)
from agent_server.agent.problems import Problem
from agent_server.errors import (
    AgentServerError,
)
from agent_server.jsonrpc import INTERNAL_ERROR
from agent_server.llm.messages import (
    IMAGE_TYPES,
    ImageContent,
    TextContent,
    Usage,
    UserContent,
    UserMessage,
    content_to_json,
    is_base64,
)
from agent_server.lsp.items import (
    model_json,
    pins_json,
    plan_json,
    restored_files,
    transcript_items,
)
from agent_server.session.entries import MessageEntry
from agent_server.stderr_log import shorten

# Our own error codes: a block outside JSON-RPC's reserved -32768..-32000 (where LSP has
# its -32002 ServerNotInitialized and -32001 UnknownErrorCode) and LSP's -32899..-32800.
UNKNOWN_SESSION = protocol.ERROR_CODES["UnknownSession"]
SESSION_BUSY = protocol.ERROR_CODES["SessionBusy"]
CONFIG_ERROR = protocol.ERROR_CODES["ConfigurationError"]
MAX_PROMPT_CHARS = 2_000_000
MAX_TITLE_CHARS = 1000  # a session's title, shown in every session list
MAX_FILE_CHARS = 20_000_000  # a revised change the editor sends back (agent/requestPermission)
DEFAULT_PAGE = 100  # transcript entries per page unless the editor asks otherwise
MAX_PAGE = 1000

RESTORE_CHOICES: tuple[str, ...] = get_args(protocol.RestoreChoice)
PERMISSION_MODES: tuple[str, ...] = get_args(protocol.PermissionMode)
THINKING_LEVELS: tuple[str, ...] = get_args(protocol.ThinkingLevel)
PIN_KINDS: tuple[str, ...] = get_args(protocol.PinKind)

if TYPE_CHECKING:  # the agent's heavier modules load after `initialize` (lsp/startup.py)
    # pygls's exceptions import lsprotocol.types (about a second): `agent-server chat`
    # turns events into these shapes too, and loads no LSP machinery.
    from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

    from agent_server.agent.checkpoints import RestorePlan
    from agent_server.agent.context_manager import CompactionResult
    from agent_server.agent.mcp.session_tools import AcceptOutcome, McpStatus
    from agent_server.agent.mentions import Completion
    from agent_server.agent.model_choice import ModelChoice
    from agent_server.agent.model_switch import ModelSwitch, ThinkingSwitch
    from agent_server.agent.permissions import PermissionAnswer, PermissionRequest
    from agent_server.agent.rewind import FileThen, Rewound
    from agent_server.agent.session import AgentSession
    from agent_server.agent.transcript import Page
    from agent_server.agent.turn import TurnResult
    from agent_server.session.ledger_file import LoadReport
    from agent_server.session.store import SessionInfo


class UnknownWorkspaceError(AgentServerError):
    code = "unknown_workspace"
    rpc = "UnknownWorkspace"


def invalid(message: str) -> JsonRpcInvalidParams:
    from pygls.exceptions import JsonRpcInvalidParams

    return JsonRpcInvalidParams(message=message)


def rpc_error(error: AgentServerError) -> JsonRpcException:
    """The JSON-RPC error for an agent error (docs/protocol.md, Errors)."""
    from pygls.exceptions import JsonRpcException

    message = shorten(error.message, 2000)  # it may quote a param
    code = protocol.ERROR_CODES[error.rpc] if error.rpc else INTERNAL_ERROR
    return JsonRpcException(code=code, message=message, data={"code": error.code})


class Params:
    """Typed reads of one request's params."""

    def __init__(self, raw: Any, method: str) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise invalid(f"{method}: params must be an object")
        self.raw = raw
        self.method = method

    def _fail(self, key: str, problem: str) -> JsonRpcInvalidParams:
        return invalid(f"{self.method}: '{key}' {problem}")

    def string(self, key: str) -> str:
        value = self.raw.get(key)
        if value is None:
            raise self._fail(key, "is required")
        if not isinstance(value, str):
            raise self._fail(key, f"must be a string, not {type(value).__name__}")
        if not value.strip():
            raise self._fail(key, "must not be empty")
        return value

    def optional_string(self, key: str, max_chars: int | None = None) -> str | None:
        if self.raw.get(key) is None:
            return None
        value = self.string(key)
        if max_chars is not None and len(value) > max_chars:
            raise self._fail(key, f"is longer than {max_chars} characters")
        return value

    def count(self, key: str, default: int, maximum: int) -> int:
        """An optional integer in [1, maximum]."""
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, f"must be an integer, not {type(value).__name__}")
        if not 1 <= value <= maximum:
            raise self._fail(key, f"must be between 1 and {maximum}")
        return value

    def boolean(self, key: str, default: bool | None = False) -> bool:
        """true or false; required when there is no default."""
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise self._fail(key, "is required (true or false)")
            return default
        if not isinstance(value, bool):
            raise self._fail(key, f"must be true or false, not {type(value).__name__}")
        return value

    def text(self, key: str) -> str:
        """A string that may be empty, but not absent (an @ with nothing typed after it)."""
        value = self.raw.get(key)
        if value is None:
            raise self._fail(key, "is required (a string, which may be empty)")
        if not isinstance(value, str):
            raise self._fail(key, f"must be a string, not {type(value).__name__}")
        return value

    def choice(self, key: str, allowed: tuple[str, ...], default: str | None) -> Any:
        """One of `allowed`; required when there is no default."""
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise self._fail(key, "is required")
            return default
        if value not in allowed:
            raise self._fail(key, "must be one of " + ", ".join(allowed))
        return value

    def token(self, key: str) -> str | int | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self._fail(key, "must be a string or an integer")
        return value

    def problems(self, key: str = "problems") -> list[Problem]:
        """A list of problems (protocol.Problem), at most 200."""
        value = self.raw.get(key)
        if not isinstance(value, list) or len(value) > 200:
            raise self._fail(key, "must be a list of at most 200 problems")
        out = []
        for index, item in enumerate(value):
            where = f"{key}[{index}]"
            if not isinstance(item, Mapping):
                raise self._fail(where, "must be an object")
            line, severity = item.get("line"), item.get("severity")
            message, source = item.get("message"), item.get("source", "")
            if isinstance(line, bool) or not isinstance(line, int) or line < 1:
                raise self._fail(f"{where}.line", "must be a line number (from 1)")
            if severity not in get_args(protocol.ProblemSeverity):
                raise self._fail(f"{where}.severity", "must be 'error' or 'warning'")
            if not isinstance(message, str) or not isinstance(source, str):
                raise self._fail(where, "needs a string message (and source)")
            out.append(Problem(line, cast(protocol.ProblemSeverity, severity), message, source))
        return out

    def workspace(self, key: str = "workspaceUri") -> Path:
        return uri_to_path(self.string(key), self._fail)

    def prompt(self, key: str = "prompt") -> tuple[UserContent, ...]:
        value = self.raw.get(key)
        if value is None:
            raise self._fail(key, "is required")
        if isinstance(value, str):
            if not value.strip():
                raise self._fail(key, "must not be empty")
            if len(value) > MAX_PROMPT_CHARS:
                raise self._fail(key, f"is longer than {MAX_PROMPT_CHARS} characters")
            return (TextContent(value),)
        if not isinstance(value, list) or not value:
            raise self._fail(key, "must be a string or a non-empty list of content blocks")
        blocks: list[UserContent] = []
        for index, block in enumerate(value):
            where = f"{key}[{index}]"
            if not isinstance(block, Mapping):
                raise self._fail(where, "must be a content block object")
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise self._fail(f"{where}.text", "must be a string")
                blocks.append(TextContent(text))
            elif kind == "image":
                mime = block.get("mimeType")
                data = block.get("data")
                if mime not in IMAGE_TYPES:
                    raise self._fail(
                        f"{where}.mimeType", "must be one of " + ", ".join(IMAGE_TYPES)
                    )
                if not isinstance(data, str) or not data:
                    raise self._fail(f"{where}.data", "must be base64 image data")
                if not is_base64(data):
                    raise self._fail(f"{where}.data", "is not valid base64")
                blocks.append(ImageContent(data=data, mime_type=str(mime)))
            else:
                raise self._fail(f"{where}.type", "must be 'text' or 'image'")
        if not any(isinstance(b, ImageContent) or b.text.strip() for b in blocks):
            raise self._fail(key, "has no text or image")
        if sum(len(b.text) for b in blocks if isinstance(b, TextContent)) > MAX_PROMPT_CHARS:
            raise self._fail(key, f"is longer than {MAX_PROMPT_CHARS} characters")
        return tuple(blocks)


def uri_to_path(uri: str, fail: Any = None) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        if fail is not None:
            raise fail("workspaceUri", "must be a file:// URI")
        raise invalid("a workspace URI must be a file:// URI")
    return Path(unquote(parsed.path))


def path_to_uri(path: Path) -> str:
    return path.resolve().as_uri()


# --- outgoing shapes: the results and notifications of agent_server/protocol.py -------------
# What the agent layer already gives as JSON (`to_json`) is cast to its described type; the
# tests check every shape the server sends against the description.


def mcp_status_json(session_id: str, status: McpStatus) -> protocol.McpStatusParams:
    """agent/mcp/status and the answer to agent/mcp/servers."""
    return cast(protocol.McpStatusParams, {"sessionId": session_id, **status.to_json()})


def usage_json(session_id: str, snapshot: UsageSnapshot) -> protocol.UsageSnapshot:
    """The usage snapshot: the context meter, the last call, the turn (running, or the last
    one) and the session, each with its tokens and cost."""
    return {
        "sessionId": session_id,
        "used": snapshot.used,
        "size": snapshot.size,
        "compactAt": snapshot.compact_at,
        "windowNumber": snapshot.window_number,
        "lastCall": _tokens_json(snapshot.last_call or Usage()),
        "lastTurn": {**_tokens_json(snapshot.turn), "calls": snapshot.turn_calls},
        "session": {**_tokens_json(snapshot.session), "calls": snapshot.calls},
        "cacheHitRate": round(snapshot.cache_hit_rate, 4),
        "cost": round(snapshot.cost, 6),
    }


def _tokens_json(usage: Usage) -> protocol.LastTurnUsage:
    return {
        "input": usage.input,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "output": usage.output,
        "cost": round(usage.cost.total, 6),
    }


def _blocks(blocks: Iterable[UserContent]) -> list[protocol.PromptBlock]:
    return [cast(protocol.PromptBlock, content_to_json(block)) for block in blocks]


def session_state_json(session: AgentSession) -> protocol.SessionState:
    """A session's model, permission mode and how its commands run (the sandbox), as the
    editor shows them beside the meter."""
    return {
        "model": model_json(session.model),
        "thinking": session.thinking,
        "canThink": session.can_think,
        "mode": session.mode,
        "sandbox": cast(protocol.SandboxState, session.confinement.to_json()),
    }


def session_new_result(session: AgentSession) -> protocol.SessionNewResult:
    session_id = session.session_id
    return {
        "sessionId": session_id,
        "usage": usage_json(session_id, session.usage.snapshot()),
        **session_state_json(session),
        "mcp": mcp_status_json(session_id, session.tools.status()),
    }


def session_list_result(infos: Iterable[SessionInfo]) -> protocol.SessionListResult:
    return {
        "sessions": [
            {
                "sessionId": info.session_id,
                "title": info.title,
                "model": info.model,
                "createdAt": info.created_at,
                "updatedAt": info.updated_at,
                "entryCount": info.entry_count,
                "firstPrompt": info.first_prompt,
                "promptCount": info.prompt_count,
            }
            for info in infos
        ]
    }


def session_load_result(
    session: AgentSession, page: Page, snapshot: UsageSnapshot
) -> protocol.SessionLoadResult:
    session_id = session.session_id
    state = session_state_json(session)
    out: protocol.SessionLoadResult = {
        "sessionId": session_id,
        "title": session.ledger.facts.title,
        "leafId": session.ledger.leaf_id,
        "transcript": _items(page),
        "cursor": page.cursor,
        "usage": usage_json(session_id, snapshot),
        "model": state["model"],
        "thinking": state["thinking"],
        "canThink": state["canThink"],
        "mode": state["mode"],
        "sandbox": state["sandbox"],
        "mcp": mcp_status_json(session_id, session.tools.status()),
        "pins": pins_json(session.memory.pins()),
        "plan": plan_json(session.memory.plan()),
    }
    repair = repair_json(session.ledger.load_report)
    if repair is not None:
        out["repair"] = repair
    return out


def history_result(session_id: str, page: Page) -> protocol.SessionHistoryResult:
    return {"sessionId": session_id, "transcript": _items(page), "cursor": page.cursor}


def _items(page: Page) -> list[protocol.TranscriptItem]:
    return transcript_items(page.events)


def turn_result(
    session_id: str, result: TurnResult, snapshot: UsageSnapshot
) -> protocol.TurnResult:
    out: protocol.TurnResult = {
        "turnId": result.turn_id,
        "stopReason": result.stop_reason,
        "usage": usage_json(session_id, snapshot),
    }
    if result.error is not None:
        out["error"] = {"code": result.error_code, "message": result.error}
    return out


def compact_result(outcome: CompactionResult, window_number: int) -> protocol.CompactResult:
    out: protocol.CompactResult = {
        "outcome": outcome.outcome if outcome.outcome != "cancelled" else "failed",
        "tokensBefore": outcome.tokens_before,
        "tokensAfter": outcome.tokens_after,
        "windowNumber": window_number,
    }
    if outcome.error:
        out["error"] = outcome.error
    return out


def rewind_json(rewound: Rewound) -> protocol.RewindResult:
    out: protocol.RewindResult = {
        "leafId": rewound.leaf_id,
        "files": restored_files(rewound.files),
    }
    if rewound.prompt is not None:
        out["prompt"] = _blocks(rewound.prompt)
    if rewound.summary is not None:
        out["summary"] = rewound.summary
    if rewound.problems:
        out["problems"] = list(rewound.problems)
    return out


def rewind_preview_json(
    session: AgentSession, entry_id: str, plan: RestorePlan
) -> protocol.RewindPreviewResult:
    """What a rewind to `entry_id` would do: the prompt it would give back (when the entry is
    a prompt), and the files a restore would change or cannot restore."""
    out = cast(protocol.RewindPreviewResult, {"entryId": entry_id, **plan.to_json()})
    entry = session.ledger.tree.get(entry_id)
    if (
        isinstance(entry, MessageEntry)
        and isinstance(entry.message, UserMessage)
        and entry.message.note is None
    ):
        out["prompt"] = _blocks(entry.message.typed)
    return out


# The most of a file's earlier content `agent/rewind/changes` sends (a diff editor's side).
MAX_FILE_THEN = 1 << 20


def rewind_changes_json(entry_id: str, files: Iterable[FileThen]) -> protocol.RewindChangesResult:
    """`files` as read with `MAX_FILE_THEN` (Rewinder.files_then)."""
    out: list[protocol.FileThen] = []
    for file in files:
        then: protocol.FileThen = {"path": file.path, "existed": file.size is not None}
        if file.size is not None and file.data is None:
            then["omitted"] = "over 1 MiB"
        elif file.data is not None:
            try:
                then["text"] = file.data.decode("utf-8")
            except UnicodeDecodeError:
                then["omitted"] = "binary"
        out.append(then)
    return {"entryId": entry_id, "files": out}


def model_list_result(
    provider: str, current: str, choices: Iterable[ModelChoice]
) -> protocol.ModelListResult:
    return {
        "provider": provider,
        "current": current,
        "models": [cast(protocol.ModelChoice, choice.to_json(current)) for choice in choices],
    }


def model_set_result(
    session_id: str, switch: ModelSwitch, snapshot: UsageSnapshot
) -> protocol.ModelSetResult:
    return {
        "model": model_json(switch.model),
        "entryId": switch.entry_id,
        "cost": cast(protocol.SwitchCost, switch.cost.to_json()),
        "note": switch.note,
        "usage": usage_json(session_id, snapshot),
    }


def thinking_set_result(
    session: AgentSession, switch: ThinkingSwitch
) -> protocol.ThinkingSetResult:
    return {
        "thinking": switch.thinking,
        "canThink": session.can_think,
        "entryId": switch.entry_id,
        "cost": cast(protocol.SwitchCost, switch.cost.to_json()),
        "note": switch.note,
    }


def mention_result(found: Iterable[Completion]) -> protocol.MentionCompleteResult:
    return {"items": [cast(protocol.MentionItem, item.to_json()) for item in found]}


def accept_tools_result(outcome: AcceptOutcome) -> protocol.McpAcceptToolsResult:
    return {"accepted": outcome.accepted, "deferred": outcome.deferred, "tokens": outcome.tokens}


def decision_json(session_id: str, event: ContextDecided) -> protocol.ContextDecisionParams:
    decision = event.decision
    return {
        "sessionId": session_id,
        "turnId": event.turn_id,
        "action": decision.action,
        "reason": decision.reason,
        "tokens": decision.tokens,
        "threshold": decision.threshold,
        "window": decision.window,
    }


def permission_json(
    session_id: str, request: PermissionRequest
) -> protocol.RequestPermissionParams:
    """The params of agent/requestPermission: the call as the Agent Client Protocol's
    ToolCallUpdate (with the file change as diff content) and the choices."""
    call = request.tool_call
    tool_call: protocol.PermissionToolCall = {
        "toolCallId": call.id,
        "title": request.title,
        "toolKind": request.tool.kind,
        "rawInput": dict(call.arguments),
    }
    if request.change is not None:
        tool_call["content"] = [cast(protocol.ToolCallDiffContent, request.change.to_json())]
    return {
        "sessionId": session_id,
        "toolCall": tool_call,
        "options": [cast(protocol.PermissionOption, o.to_json()) for o in request.options],
    }


def permission_answer(
    result: Any, options: list[protocol.PermissionOption]
) -> str | PermissionAnswer | None:
    """The editor's answer to agent/requestPermission: the option picked (one offered), with
    what the user told the agent (`message`, with a rejection) or the change as the user
    revised it (`newText`, with an allowance); None for "cancelled" or anything else."""
    outcome = result.get("outcome") if isinstance(result, Mapping) else None
    if not isinstance(outcome, Mapping) or not isinstance(outcome.get("selected"), str):
        return None
    selected = str(outcome["selected"])
    if not any(o["optionId"] == selected for o in options):
        return None
    message, new_text = outcome.get("message"), outcome.get("newText")
    message = message[:MAX_PROMPT_CHARS] if isinstance(message, str) and message.strip() else None
    new_text = new_text if isinstance(new_text, str) and len(new_text) <= MAX_FILE_CHARS else None
    if message is None and new_text is None:
        return selected
    from agent_server.agent.permissions import PermissionAnswer

    return PermissionAnswer(selected, message, new_text)


def compaction_json(
    session_id: str, event: CompactionStarted | CompactionFinished
) -> protocol.CompactionParams:
    out: protocol.CompactionParams = {
        "sessionId": session_id,
        "compactionId": event.compaction_id,
        "status": "started" if isinstance(event, CompactionStarted) else event.status,
        "reason": event.reason,
        "tokensBefore": event.tokens_before,
    }
    if isinstance(event, CompactionStarted):
        return out
    if event.tokens_after is not None:
        out["tokensAfter"] = event.tokens_after
    if event.summary is not None:
        out["summary"] = event.summary
    if event.first_kept_entry_id is not None:
        out["firstKeptEntryId"] = event.first_kept_entry_id
    if event.error is not None:
        out["error"] = event.error
    return out


def repair_json(report: LoadReport) -> protocol.LedgerRepair | None:
    """What opening a damaged ledger repaired (None when nothing was)."""
    if report.clean:
        return None
    return {
        "message": report.describe(),
        "keptEntries": report.entry_count,
        "issues": [
            {
                "line": issue.line_number,
                "offset": issue.offset,
                "reason": issue.reason,
                "action": issue.action,
            }
            for issue in report.issues
        ],
        "truncatedBytes": report.truncated_bytes,
        "abortedToolCalls": list(report.aborted_tool_calls),
    }


def overflow_json(session_id: str, event: OverflowHappened) -> protocol.OverflowParams:
    return {
        "sessionId": session_id,
        "turnId": event.turn_id,
        "kind": event.kind,
        "action": event.action,
        "message": event.message,
    }
