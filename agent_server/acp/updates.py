"""From the agent's world to ACP's: events and the stored transcript (agent/transcript.py's
items) as session updates, prompts as user content, modes, config options and commands.

Live turns and reloaded history map onto the same updates: a tool call is a `tool_call` with
the tool's own title, kind and locations, then a `tool_call_update` with its status and
output. A compaction is ACP 1.7's `compaction_update` / `compaction_summary_chunk` for a
client that advertises `session.compaction`, else a tool call of its own ("Compacting the
conversation"); a notice (retries, overflow, files changed outside, MCP trouble) is a
`notice` update for a client that advertises `session.notices`, else an agent message chunk
with a message id of their own. The Python SDK (0.12.1) has no models for those three
updates: they are plain JSON (`RawUpdate`), checked against the official JSON schema by the
TypeScript client's tests (tests/acp/node). Text that came from a file or a command is
fenced, so the editor shows it literally rather than as Markdown.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast, get_args

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AudioContentBlock,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    BlobResourceContents,
    ConfigOptionUpdate,
    ContentToolCallContent,
    Cost,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    ResourceContentBlock,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    StopReason,
    TerminalToolCallContent,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UnstructuredCommandInput,
    UsageUpdate,
    UserMessageChunk,
)

from agent_server import protocol
from agent_server.agent.checkpoints import DETAILS_KEY
from agent_server.agent.events import (
    AgentEvent,
    AnswerDiscarded,
    BranchTaken,
    CompactionFinished,
    CompactionStarted,
    McpStatusChanged,
    ModelChanged,
    Notice,
    OverflowHappened,
    PlanUpdated,
    TextChunk,
    ThinkingChunk,
    ToolCallStarted,
    ToolCallUpdated,
    TurnEnded,
    TurnStarted,
    UsageSnapshot,
    UsageUpdated,
)
from agent_server.agent.mcp.session_tools import PendingTools
from agent_server.agent.permissions import PERMISSION_MODES, PermissionMode, PermissionRequest
from agent_server.agent.prompt_commands import prompt_commands
from agent_server.agent.tool_runner import ABORTED_BY_USER
from agent_server.llm.messages import (
    IMAGE_TYPES,
    ImageContent,
    TextContent,
    UserContent,
    is_base64,
    usage_to_json,
)
from agent_server.llm.models import ModelInfo
from agent_server.llm.stream import THINKING_LEVELS, ThinkingLevel
from agent_server.session.entries import Pin, PlanItem

# A session update the Python SDK has no model for yet (ACP 1.7's notice and compaction
# updates): the `update` object as the official schema spells it, sent as it is.
RawUpdate: TypeAlias = dict[str, Any]
SessionUpdate: TypeAlias = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AvailableCommandsUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | AgentPlanUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | RawUpdate
)
PromptBlock: TypeAlias = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
ToolContent: TypeAlias = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

ACP_TOOL_KINDS: frozenset[str] = frozenset(get_args(ToolKind))
ACP_STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))
# The streamed output of a running command shown in its card: the tail, like a terminal.
STREAMED_OUTPUT_CHARS = 16_000

MODE_NAMES = protocol.PERMISSION_MODE_NAMES  # one description of each mode
COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    (
        "compact",
        "Summarise the older conversation now, keeping the last turns verbatim",
        "optional instructions for the summary",
    ),
    ("usage", "Show how full the context window is, the cache hit rate and the cost", None),
    (
        "remember",
        "Pin a rule (or, after fact:, a fact) for the session, carried across every compaction",
        "the rule, or fact: the fact",
    ),
    ("forget", "Remove a pin (/pins lists them with their ids)", "the pin's id"),
    ("pins", "Show the pinned rules and facts, and the task's plan", None),
    (
        "tools",
        "Use the changed MCP tools from the next request (it re-reads the prompt once)",
        None,
    ),
)
TOOLS_ACCEPT = "you send /tools"  # how an ACP user takes in a change of the MCP tools


class PromptError(ValueError):
    """A prompt block the agent cannot take; the message says which and why."""


# --- prompts and commands -------------------------------------------------------------------


def prompt_content(blocks: Sequence[PromptBlock]) -> tuple[UserContent, ...]:
    """The user's message as the agent's content blocks.

    Text and images pass through; an embedded text resource (a file the user attached)
    becomes text wrapped in `<context ref="uri">`, a resource link becomes a mention of its
    URI. Audio, and binary resources that are not images, are refused.
    """
    content: list[UserContent] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            content.append(TextContent(block.text))
        elif isinstance(block, ImageContentBlock):
            if not block.data:
                raise PromptError("an image must carry its data (base64); a URI alone is not read")
            if not is_base64(block.data):
                raise PromptError("an image's data is not valid base64")
            content.append(prompt_image(block.data, block.mime_type))
        elif isinstance(block, ResourceContentBlock):
            content.append(TextContent(linked_text(block.name, block.uri)))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                content.append(TextContent(attached_text(resource.uri, resource.text)))
            elif isinstance(resource, BlobResourceContents) and (
                resource.mime_type or ""
            ).startswith("image/"):
                if not is_base64(resource.blob):
                    raise PromptError(f"the attached image {resource.uri} is not valid base64")
                content.append(prompt_image(resource.blob, resource.mime_type or ""))
            else:
                raise PromptError(
                    f"the attached resource {resource.uri} is binary; attach text or an image"
                )
        else:
            raise PromptError("audio prompts are not supported; send text or images")
    if not content:
        raise PromptError("the prompt is empty")
    return tuple(content)


def attached_text(uri: str, text: str) -> str:
    """An attached file (an embedded text resource) as the model reads it."""
    return f'<context ref="{uri}">\n{text}\n</context>'


def linked_text(name: str, uri: str) -> str:
    """A resource link (a file the user mentioned) as the model reads it."""
    return f"[@{name}]({uri})"


_ATTACHED = re.compile(r'<context ref="([^"\n]*)">\n(.*)\n</context>', re.DOTALL)
_LINKED = re.compile(r"\[@([^\n]*)\]\(([^\s()]*)\)")


def replayed_prompt_block(text: str) -> PromptBlock:
    """One stored block of a prompt as the client sent it: an attached file or a mention
    back as its resource block (`attached_text`, `linked_text`), anything else as text."""
    if attached := _ATTACHED.fullmatch(text):
        uri, body = attached.groups()
        return EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri=uri, text=body)
        )
    if linked := _LINKED.fullmatch(text):
        name, uri = linked.groups()
        return ResourceContentBlock(type="resource_link", name=name, uri=uri)
    return TextContentBlock(type="text", text=text)


def prompt_image(data: str, mime_type: str) -> ImageContent:
    """An attached image, of a type every provider takes (the others are refused, not
    forwarded to a provider that would fail the whole turn on them)."""
    if mime_type not in IMAGE_TYPES:
        kinds = ", ".join(kind.removeprefix("image/") for kind in IMAGE_TYPES)
        shown = mime_type or "(none)"
        raise PromptError(f"images of type {shown} are not supported; attach {kinds}")
    return ImageContent(data, mime_type)


def prompt_title(blocks: Sequence[PromptBlock]) -> str | None:
    """A session's title from its first prompt: the first line the user typed, else the
    names of what they attached; never the text of an attached file or its markup."""
    typed = " ".join(b.text for b in blocks if isinstance(b, TextContentBlock)).strip()
    if typed:
        return typed.splitlines()[0][:80]
    names = [
        b.name if isinstance(b, ResourceContentBlock) else b.resource.uri.rsplit("/", 1)[-1]
        for b in blocks
        if isinstance(b, ResourceContentBlock | EmbeddedResourceContentBlock)
    ]
    return ", ".join(name for name in names if name)[:80] or None


def slash_command(content: Sequence[UserContent]) -> tuple[str, str] | None:
    """(name, argument) when the prompt is one of the agent's commands, e.g. `/compact`."""
    if len(content) != 1 or not isinstance(content[0], TextContent):
        return None
    text = content[0].text.strip()
    for name, _description, _hint in COMMANDS:
        word = f"/{name}"
        if text == word or text.startswith((word + " ", word + "\n")):
            return name, text[len(word) :].strip()
    return None


def takes_argument(name: str) -> bool:
    """Whether the command `name` reads words after it (it has an input hint)."""
    return any(hint for command, _description, hint in COMMANDS if command == name)


def available_commands(workspace: Path) -> AvailableCommandsUpdate:
    """The agent's commands, then the user's and the workspace's prompt commands (of other
    names: agent/prompt_commands.py)."""
    own = [(name, description, hint) for name, description, hint in COMMANDS]
    written = [(c.name, c.description, c.hint or None)
               for c in prompt_commands(workspace, leave_out={name for name, _, _ in own})]
    return AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[
            AvailableCommand(
                name=name,
                description=description,
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint))
                if hint
                else None,
            )
            for name, description, hint in [*own, *written]
        ],
    )


# --- modes and config options ---------------------------------------------------------------


def mode_state(mode: PermissionMode) -> SessionModeState:
    return SessionModeState(
        current_mode_id=mode,
        available_modes=[
            SessionMode(id=mode_id, name=MODE_NAMES[mode_id][0], description=MODE_NAMES[mode_id][1])
            for mode_id in PERMISSION_MODES
        ],
    )


def mode_update(mode: PermissionMode) -> CurrentModeUpdate:
    """The mode changed through its config option: a client that shows the modes sees it."""
    return CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode)


def options_update(options: Sequence[SessionConfigOptionSelect]) -> ConfigOptionUpdate:
    """The mode changed through `session/set_mode`: a client that shows the config options
    (the mode is one of them) sees it."""
    return ConfigOptionUpdate(session_update="config_option_update", config_options=list(options))


THINKING_NAMES: Mapping[str, tuple[str, str]] = {
    "off": ("Off", "The provider's default: no extended thinking where it is optional"),
    "low": ("Low", "A little thinking before answering"),
    "medium": ("Medium", "More thinking: slower, more output tokens"),
    "high": ("High", "The most thinking the model takes"),
}


def config_options(
    mode: PermissionMode,
    model: str,
    models: Sequence[ModelInfo],
    thinking: ThinkingLevel | None = None,
) -> list[SessionConfigOptionSelect]:
    """The permission mode, the model and, when the model thinks on request (`thinking` is
    its level, None when it cannot), the thinking level, as the protocol's select options."""
    options = [
        select_option(
            "mode", "Permissions", "When the agent asks before running a tool", "mode", mode,
            [(mode_id, *MODE_NAMES[mode_id]) for mode_id in PERMISSION_MODES],
        ),
        select_option(
            "model", "Model", "The model for the next turns (applied from the next prompt)",
            "model", model,
            [(info.id, info.name, _model_description(info)) for info in models],
        ),
    ]
    if thinking is not None:
        options.append(
            select_option(
                "thinking", "Thinking",
                "How hard the model thinks before it answers (from the next prompt)",
                "thought_level", thinking,
                [(level, *THINKING_NAMES[level]) for level in THINKING_LEVELS],
            )
        )
    return options


def select_option(
    config_id: str,
    name: str,
    description: str,
    category: Literal["mode", "model", "thought_level"],
    current: str,
    values: Sequence[tuple[str, str, str]],
) -> SessionConfigOptionSelect:
    """One select option; `values` are (value, name, description)."""
    return SessionConfigOptionSelect(
        type="select",
        id=config_id,
        name=name,
        description=description,
        category=category,
        current_value=current,
        options=[
            SessionConfigSelectOption(value=value, name=label, description=about)
            for value, label, about in values
        ],
    )


def _model_description(info: ModelInfo) -> str:
    window = info.context_window
    size = f"{window // 1_000_000}M" if window >= 1_000_000 else f"{window // 1000}k"
    return f"{size} context window"


def usage_update(snapshot: UsageSnapshot) -> UsageUpdate:
    """The context meter, with agent-server's own figures under `_meta.agentServer`."""
    details: dict[str, Any] = {
        "compactAt": snapshot.compact_at,
        "windowNumber": snapshot.window_number,
        "cacheHitRate": snapshot.cache_hit_rate,
        "calls": snapshot.calls,
    }
    if snapshot.last_call is not None:
        details["lastCall"] = usage_to_json(snapshot.last_call)
    details["turn"] = {**usage_to_json(snapshot.turn), "calls": snapshot.turn_calls}
    return UsageUpdate(
        session_update="usage_update",
        used=max(0, snapshot.used),
        size=snapshot.size,
        cost=Cost(amount=round(snapshot.cost, 6), currency="USD"),
        field_meta={"agentServer": details},
    )


def usage_text(snapshot: UsageSnapshot) -> str:
    """The `/usage` answer."""
    share = snapshot.used / snapshot.size if snapshot.size else 0.0
    return (
        f"Context: {snapshot.used:,} of {snapshot.size:,} tokens ({share:.0%}); "
        f"compaction at {snapshot.compact_at:,}. Cache window {snapshot.window_number}, "
        f"cache hit rate {snapshot.cache_hit_rate:.0%}, {snapshot.calls} model calls, "
        f"${snapshot.cost:.4f} so far."
    )


def pins_text(pins: Sequence[Pin]) -> str:
    """The `/pins` answer: each pin's id, kind and author, its text literally (fenced)."""
    if not pins:
        return "Nothing pinned (/remember pins a rule)."
    lines = [f"{pin.id}  {pin.kind}, by the {pin.by}: {pin.text}" for pin in pins]
    return "Pinned, carried across every compaction:\n\n" + code_block("\n".join(lines))


def title_update(title: str) -> SessionInfoUpdate:
    return SessionInfoUpdate(session_update="session_info_update", title=title)


def notice_text(message: str, message_id: str) -> AgentMessageChunk:
    """A notice as a quoted message of its own (every line quoted)."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in message.strip().splitlines())
    return agent_text(f"\n\n{quoted}\n\n", message_id)


def own_message_id(kind: str) -> str:
    """A `messageId` for a message of the agent's own (a command's answer, a quoted notice):
    new each time, since ACP joins the chunks that share one into one message."""
    return f"{kind}-{secrets.token_hex(4)}"


def agent_text(text: str, message_id: str) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=message_id,
    )


def thought_text(text: str, message_id: str) -> AgentThoughtChunk:
    """Thinking of the model call whose answer streams under `message_id`. ACP's messageId
    names one message ("a change in messageId indicates a new message has started"), and a
    client may key what it shows by it alone: the thought is a message of its own, under an
    id of its own, live and reloaded alike."""
    return AgentThoughtChunk(
        session_update="agent_thought_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=f"{message_id}-thought",
    )


# --- ACP 1.7's notice and compaction updates ---------------------------------------------------


@dataclass(frozen=True)
class ClientUpdates:
    """The updates of ACP 1.7 the client said it takes (`clientCapabilities.session`):
    `notices` for `notice`, `compaction` for `compaction_update` and
    `compaction_summary_chunk`. An agent must send them only then."""

    notices: bool = False
    compaction: bool = False

    @classmethod
    def from_capabilities(cls, session: object) -> ClientUpdates:
        """From the raw `clientCapabilities.session` object: `{}` advertises a feature,
        omitted or null does not."""
        if not isinstance(session, Mapping):
            return cls()
        return cls(
            notices=isinstance(session.get("notices"), Mapping),
            compaction=isinstance(session.get("compaction"), Mapping),
        )


def notice_update(message: str, severity: str = "info", detail: str | None = None) -> RawUpdate:
    """A `notice`: a plain-text title that stands alone (the message's first sentence or
    line) and the rest as its description."""
    title, rest = notice_title(message)
    description = "\n".join(part for part in (rest, detail) if part) or None
    update: RawUpdate = {"sessionUpdate": "notice", "severity": severity, "title": title}
    if description:
        update["description"] = description
    return update


def notice_title(message: str) -> tuple[str, str | None]:
    """(title, the rest): the first line, cut at its first sentence when it is long."""
    first, _, rest = message.strip().partition("\n")
    if len(first) > 80 and ". " in first:
        first, _, more = first.partition(". ")
        first += "."
        rest = f"{more}\n{rest}" if rest else more
    return (first or "Notice"), (rest.strip() or None)


def compaction_update(
    compaction_id: str,
    status: str,
    details: Mapping[str, Any],
    *,
    error: str | None = None,
    summary: str | None = None,
) -> RawUpdate:
    """A `compaction_update` (an upsert of the compaction `compaction_id`), agent-server's
    figures under `_meta.agentServer`; `summary` replaces the shown summary (a replay)."""
    update: RawUpdate = {
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
        "_meta": {"agentServer": {k: v for k, v in details.items() if v is not None}},
    }
    if error:
        update["error"] = error
    if summary:
        update["summary"] = [{"type": "text", "text": code_block(summary)}]
    return update


def compaction_summary_chunk(compaction_id: str, summary: str) -> RawUpdate:
    """The summary, fenced like every text the model wrote about the session's files."""
    return {
        "sessionUpdate": "compaction_summary_chunk",
        "compactionId": compaction_id,
        "content": {"type": "text", "text": code_block(summary)},
    }


def compaction_updates(event: CompactionStarted | CompactionFinished) -> list[RawUpdate]:
    details: dict[str, Any] = {"reason": event.reason, "tokensBefore": event.tokens_before}
    if isinstance(event, CompactionStarted):
        return [compaction_update(event.compaction_id, "in_progress", details)]
    details |= {"tokensAfter": event.tokens_after, "firstKeptEntryId": event.first_kept_entry_id}
    out = []
    if event.status == "completed" and event.summary:
        out.append(compaction_summary_chunk(event.compaction_id, event.summary))
    out.append(compaction_update(event.compaction_id, event.status, details, error=event.error))
    return out


# --- live events ----------------------------------------------------------------------------


ANSWER_DISCARDED = (
    "The answer above was cut off by a provider error and is discarded: "
    "the retried call repeats it from the start."
)


@dataclass
class EventTranslator:
    """Turns one session's agent events into session updates.

    It keeps what the protocol needs across events: the output a running command has
    streamed so far (a tool call update replaces the content it shows), and which cards show
    a diff (kept when the call completes).
    """

    cwd: Path
    client: ClientUpdates = field(default_factory=ClientUpdates)
    streamed: dict[str, str] = field(default_factory=dict)
    diffs: dict[str, ToolContent] = field(default_factory=dict)
    open_calls: dict[str, None] = field(default_factory=dict)  # started, not finished
    mcp_states: dict[str, str] = field(default_factory=dict)  # each MCP server's last state
    pending_tools: PendingTools | None = None  # a change of the MCP tools, waiting
    terminals: dict[str, str] = field(default_factory=dict)  # call id -> editor terminal

    def terminal_shown(self, call_id: str, terminal_id: str) -> ToolCallProgress:
        """A command running in the editor's terminal: its card shows the terminal, live,
        and keeps showing it (the output, after the terminal's release) when it ends."""
        self.terminals[call_id] = terminal_id
        return progress(call_id, "in_progress", [terminal_content(terminal_id)])

    def updates(self, event: AgentEvent) -> list[SessionUpdate]:
        if isinstance(event, TextChunk):
            return [agent_text(event.text, event.message_id)]
        if isinstance(event, ThinkingChunk):
            return [thought_text(event.text, event.message_id)]
        if isinstance(event, AnswerDiscarded):  # ACP has no retraction: say it in words
            return [self.notice(ANSWER_DISCARDED, "warning")]
        if isinstance(event, ToolCallStarted):
            return [self._tool_started(event)]
        if isinstance(event, ToolCallUpdated):
            return [self._tool_updated(event)]
        if isinstance(event, UsageUpdated):
            return [usage_update(event.snapshot)]
        if isinstance(event, CompactionStarted | CompactionFinished) and self.client.compaction:
            return list[SessionUpdate](compaction_updates(event))
        if isinstance(event, CompactionStarted):
            return [compaction_started(event)]
        if isinstance(event, CompactionFinished):
            return [compaction_finished(event)]
        if isinstance(event, OverflowHappened):
            if event.action == "gaveUp":
                return []  # the turn's error (session/prompt's answer) says it, once
            return [self.notice(event.message, "warning")]
        if isinstance(event, Notice):
            if event.topic == "toolsChanged" and self.pending_tools is not None:
                return [self.notice(self.pending_tools.describe(TOOLS_ACCEPT))]
            return [self.notice(event.message, event.level)]
        if isinstance(event, ModelChanged):  # a changed setting switched the model
            return [self.notice(event.note)]
        if isinstance(event, PlanUpdated):
            return [plan_update(event.items)]
        if isinstance(event, McpStatusChanged):
            self.pending_tools = event.status.pending
            return self._mcp_problems(event)
        if isinstance(event, TurnEnded):
            return self.close_open_calls(event.stop_reason)
        return []  # TurnStarted (the client shows its own prompt)

    def replayed(self, event: AgentEvent) -> list[SessionUpdate]:
        """An event of a stored session: as `updates` made it live, but for what the live
        stream said otherwise (the prompt the client showed itself, the compaction's card as
        one completed update, a rewind in words, a note under its own id)."""
        if isinstance(event, TurnStarted):
            return list[SessionUpdate](replayed_prompt(event))
        if isinstance(event, CompactionFinished):
            return [replayed_compaction(event, self.client.compaction)]
        if isinstance(event, BranchTaken):
            text = "The conversation continued from an earlier point."
            if event.summary:
                text += f" What was left behind:\n{event.summary}"
            return [notice_text(text, f"branch-{event.entry_id}")]
        if isinstance(event, Notice) and event.entry_id is not None:
            return [notice_text(event.message, f"note-{event.entry_id}")]
        if isinstance(event, Notice):  # how a stored answer ended
            return [notice_text(event.message, "note")]
        return self.updates(event)

    def close_open_calls(self, stop_reason: str) -> list[SessionUpdate]:
        """The tool calls a turn left without a result (cancelled while running or while
        their permission question was open, or never run) as failed, so no card stays
        pending or running on the client; a cancelled one says what the agent's own result
        of a stopped call says."""
        why = ABORTED_BY_USER if stop_reason == "cancelled" else "Not run: the turn ended first."
        closed: list[SessionUpdate] = [
            finished_tool_call(call_id, "failed", why, None) for call_id in self.open_calls
        ]
        self.open_calls.clear()
        self.streamed.clear()
        self.diffs.clear()
        return closed

    def _mcp_problems(self, event: McpStatusChanged) -> list[SessionUpdate]:
        """A notice for each MCP server that failed or stopped since the last status (a
        server that exits, a URL nobody answers): without it the user would only see its
        tools go missing."""
        out: list[SessionUpdate] = []
        for server in event.status.servers:
            before = self.mcp_states.get(server.name)
            self.mcp_states[server.name] = server.state
            if server.state == before or server.state not in ("failed", "stopped"):
                continue
            what = "failed" if server.state == "failed" else "stopped"
            said = "\n".join(filter(None, (server.error, server.stderr_tail.strip()[-2000:])))
            out.append(self.notice(f"MCP server {server.name} {what}.", "error", said or None))
        return out

    def notice(
        self, message: str, severity: str = "info", detail: str | None = None
    ) -> AgentMessageChunk | RawUpdate:
        """Something the user should read that is not the model's answer: a `notice` for a
        client that takes them, else a message of its own. `detail` came from elsewhere (a
        server's error and stderr): plain text in a notice, fenced in a message, never read
        as Markdown."""
        if self.client.notices:
            return notice_update(message, severity, detail)
        text = message + ("\n" + code_block(detail) if detail else "")
        return notice_text(text, own_message_id("notice"))

    def permission_tool_call(self, request: PermissionRequest) -> ToolCallUpdate:
        """The tool call a permission question is about, diff included for edits."""
        call = request.tool_call
        arguments = dict(call.arguments)
        diff = self.diffs.get(call.id)
        if request.change is not None:
            diff = file_change_diff(self.cwd, request.change.to_json()) or diff
        return ToolCallUpdate(
            tool_call_id=call.id,
            title=request.title,
            kind=acp_kind(request.tool.kind),
            status="pending",
            raw_input=arguments,
            content=[diff] if diff is not None else None,
            locations=locations(self.cwd, request.tool.paths(call.arguments), arguments) or None,
        )

    def _tool_started(self, event: ToolCallStarted) -> ToolCallStart:
        call = event.tool_call
        self.open_calls[call.id] = None
        arguments = dict(call.arguments)
        diff = proposed_diff(self.cwd, event.kind, arguments)
        if diff is not None:
            self.diffs[call.id] = diff
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=call.id,
            title=event.title,
            kind=acp_kind(event.kind),
            status="pending",
            content=[diff] if diff is not None else None,
            locations=locations(self.cwd, event.locations, arguments) or None,
            raw_input=arguments,
        )

    def _tool_updated(self, event: ToolCallUpdated) -> ToolCallProgress:
        call_id = event.tool_call_id
        if event.status == "in_progress":
            if event.output is None:
                return progress(call_id, "in_progress")
            shown = (self.streamed.get(call_id, "") + event.output)[-STREAMED_OUTPUT_CHARS:]
            self.streamed[call_id] = shown
            return progress(call_id, "in_progress", [code_block_content(shown)])
        self.streamed.pop(call_id, None)
        self.open_calls.pop(call_id, None)
        terminal = self.terminals.pop(call_id, None)
        if terminal is not None:
            raw = raw_output(event.details)
            return ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status=event.status,
                content=[terminal_content(terminal)],
                raw_output=dict(raw) if raw else None,
            )
        diff = self.diffs.pop(call_id, None)
        change = (event.details or {}).get("change")
        if isinstance(change, Mapping):
            diff = file_change_diff(self.cwd, change) or diff
        return finished_tool_call(
            call_id,
            event.status,
            event.output or "",
            diff,
            raw_output(event.details),
            event.images,
        )


def terminal_content(terminal_id: str) -> TerminalToolCallContent:
    return TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


def progress(
    call_id: str, status: ToolCallStatus, content: list[ToolContent] | None = None
) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status=status, content=content
    )


def finished_tool_call(
    call_id: str,
    status: ToolCallStatus,
    output: str,
    diff: ToolContent | None,
    raw: Mapping[str, Any] | None = None,
    images: Sequence[ImageContent] = (),
) -> ToolCallProgress:
    """The last update of a tool call: its status, its output (fenced), the images it
    returned (an MCP tool's screenshot), and its diff, which an edit that succeeded shows
    instead of the one-line result."""
    content: list[ToolContent] = []
    if diff is not None and status != "failed":  # a refused or failed change changed nothing
        content.append(diff)
    if output and (diff is None or status == "failed"):
        content.append(code_block_content(output))
    content.extend(
        ContentToolCallContent(
            type="content",
            content=ImageContentBlock(type="image", data=image.data, mime_type=image.mime_type),
        )
        for image in images
    )
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status=status,
        content=content,
        raw_output=dict(raw) if raw else None,
    )


# Details that are the agent's own bookkeeping, not the tool's result: the file change (sent
# as the diff content), the checkpoint of a write or edit (content hashes for a rewind, which
# ACP does not offer), how a command was confined.
_NOT_RAW_OUTPUT = frozenset({"change", DETAILS_KEY, "sandbox"})


def raw_output(details: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool's details for the client (exit code, line counts, where a long output is saved,
    ...), live and replayed alike; the file change itself is the diff content."""
    if not details:
        return None
    kept = {
        key: value
        for key, value in details.items()
        if key not in _NOT_RAW_OUTPUT and _is_json(value)
    }
    return kept or None


def file_change_diff(cwd: Path, change: Mapping[str, Any]) -> ToolContent | None:
    """A tool's file change (`FileChange.to_json`: the whole text before and after) as the
    protocol's diff content."""
    path, new_text, old_text = change.get("path"), change.get("newText"), change.get("oldText")
    if not isinstance(path, str) or not isinstance(new_text, str):
        return None
    return FileEditToolCallContent(
        type="diff",
        path=str(absolute(cwd, path)),
        old_text=old_text if isinstance(old_text, str) else None,
        new_text=new_text,
    )


def _is_json(value: object) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_is_json(item) for item in value)
    return False


def acp_stop_reason(reason: str) -> StopReason:
    """A turn's stop reason as ACP names it (the agent's own names are ACP's, "error" aside,
    which is answered as an error; anything newer ends the turn normally)."""
    return cast(StopReason, reason) if reason in ACP_STOP_REASONS else "end_turn"


def acp_kind(kind: str) -> ToolKind:
    return cast(ToolKind, kind) if kind in ACP_TOOL_KINDS else "other"


def locations(
    cwd: Path, paths: Iterable[str], arguments: Mapping[str, Any]
) -> list[ToolCallLocation]:
    """Absolute paths (the protocol's rule) of the files a call touches; a read from an
    offset points at that line."""
    line = arguments.get("offset")
    first_line = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    return [
        ToolCallLocation(path=str(absolute(cwd, path)), line=first_line) for path in paths if path
    ]


def absolute(cwd: Path, path: str) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else cwd / candidate


def proposed_diff(cwd: Path, kind: str, arguments: Mapping[str, Any]) -> ToolContent | None:
    """What an edit or write will change, from its arguments, for the card and the
    permission question: the replaced text for an edit, the whole content for a write."""
    if kind != "edit":
        return None
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return None
    new_text = arguments.get("newText")
    old_text = arguments.get("oldText")
    if isinstance(new_text, str) and isinstance(old_text, str):
        return FileEditToolCallContent(
            type="diff", path=str(absolute(cwd, path)), old_text=old_text, new_text=new_text
        )
    content = arguments.get("content")
    if isinstance(content, str):
        return FileEditToolCallContent(
            type="diff", path=str(absolute(cwd, path)), old_text=None, new_text=content
        )
    return None


def code_block(text: str) -> str:
    """`text` in a Markdown code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def code_block_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(
        type="content", content=TextContentBlock(type="text", text=code_block(text))
    )


# --- compaction cards -------------------------------------------------------------------------

_REASONS: Mapping[str, str] = {
    "threshold": "the context is near the window",
    "overflow": "the provider rejected the prompt as too long",
    "truncation": "the last answer was cut off by the window",
    "manual": "/compact",
    "idle": "the prompt cache expired during a pause",
    "requested": "the model asked for it at a break",
}


def compaction_call_id(compaction_id: str) -> str:
    return f"compaction-{compaction_id}"


def compaction_started(event: CompactionStarted) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=compaction_call_id(event.compaction_id),
        title=f"Compacting the conversation ({_REASONS.get(event.reason, event.reason)})",
        kind="other",
        status="in_progress",
        raw_input={"reason": event.reason, "tokensBefore": event.tokens_before},
    )


def compaction_finished(event: CompactionFinished) -> ToolCallProgress:
    if event.status == "completed":
        title = compacted_title(event.tokens_before, event.tokens_after)
        body = event.summary or ""
        status: ToolCallStatus = "completed"
    else:
        title = f"Compaction {event.status}"
        body = event.error or ""
        status = "failed"
    raw = {
        "reason": event.reason,
        "status": event.status,
        "tokensBefore": event.tokens_before,
        "tokensAfter": event.tokens_after,
        "firstKeptEntryId": event.first_kept_entry_id,
    }
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=compaction_call_id(event.compaction_id),
        title=title,
        status=status,
        content=[code_block_content(body)] if body else None,
        raw_output={key: value for key, value in raw.items() if value is not None},
    )


def compacted_title(before: int, after: int | None) -> str:
    shown = f"{after:,}" if after is not None else "?"
    return f"Compacted the conversation: {before:,} → {shown} tokens"


# --- history ----------------------------------------------------------------------------------


def replay_updates(
    events: Iterable[AgentEvent], cwd: Path, client: ClientUpdates | None = None
) -> list[SessionUpdate]:
    """A stored session as the updates the live session sent, for `session/load`.

    `events` are the session's transcript (agent/transcript.py: the events the live session
    sent, and the markers it said by other means), oldest first; they go through a translator
    of their own, the live one's `updates` for what the live session sent.
    """
    translator = EventTranslator(cwd, client or ClientUpdates())
    return [update for event in events for update in translator.replayed(event)]


def replayed_prompt(event: TurnStarted) -> list[UserMessageChunk]:
    out: list[UserMessageChunk] = []
    for block in event.content:
        if isinstance(block, TextContent):
            content: PromptBlock = replayed_prompt_block(block.text)
        else:
            content = ImageContentBlock(type="image", data=block.data, mime_type=block.mime_type)
        out.append(
            UserMessageChunk(
                session_update="user_message_chunk", content=content, message_id=event.entry_id
            )
        )
    return out


def replayed_compaction(event: CompactionFinished, as_compaction: bool) -> SessionUpdate:
    """A stored compaction: one completed `compaction_update`, its summary included, for a
    client that takes them; else its card, completed."""
    if as_compaction:
        details = {
            "reason": event.reason,
            "tokensBefore": event.tokens_before,
            "tokensAfter": event.tokens_after,
        }
        return compaction_update(event.compaction_id, "completed", details, summary=event.summary)
    summary = event.summary
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=compaction_call_id(event.compaction_id),
        title=compacted_title(event.tokens_before, event.tokens_after),
        kind="other",
        status="completed",
        content=[code_block_content(summary)] if summary else None,
        raw_input={"reason": event.reason},
    )


def plan_update(items: Iterable[PlanItem]) -> AgentPlanUpdate:
    """The task's plan as ACP's plan update (the whole list, as the protocol wants it)."""
    return AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(content=item.content, status=item.status, priority=item.priority)
            for item in items
        ],
    )
