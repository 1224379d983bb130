"""The context strategies the cost benchmark compares, each plugged into the same turn loop.

Several are settings of the product's own harness:

- `default`: append-only history, cache breakpoints, one compaction near the window (at most
  64k tokens) whose summary request shares the cached prefix;
- `fresh-summary`: the same, with the summary asked for in a fresh prompt (the seed's way);
- `near-window`: the default compacting only near the window (`compaction.threshold: 1`),
  as before the 64k default threshold of a large window;
- `threshold-64k`: the default compacting at 64k tokens, the default threshold of a large
  window from stop 32 to stop 55 (128k since);
- `no-cache`: the same history with no cache breakpoints (`cache_retention="none"`);
- `auto-retention`: the default with `cacheRetention: "auto"` (no editor here to say the user
  is away: the long retention for each turn that follows a pause past the short lifetime);
- `repo-map-tool`: the default with the repo_map tool offered (`tools.repoMap`), which the
  simulated model calls where a map would spare it exploring (docs/simulator.md);
  `repo-map-tool-4k` with maps of 4,096 tokens (`tools.repoMapTokens`: Aider's own budget on
  these windows) instead of 1,024.

Three are the strategies agents used before prompt caching, as `ContextPolicy`s (the seam of
agent_server/agent/context_manager.py, where the product's own strategy is the default
policy), with the product's compaction turned off so that each is measured on its own terms.
Each follows its source:

- `SweAgentPolicy` (SWE-agent, `sweagent/agent/history_processors.py`, `LastNObservations`):
  all but the last 5 observations (tool outputs) are replaced in place by "Old environment
  output: (N lines omitted)", except the first observation, which it never removes (in
  SWE-agent that is the instance template). Its `polling` setting moves the cut only every
  `polling` observations (`last_removed_idx = (len(observations) // polling) * polling - n`):
  "useful for caching ... we will now keep between n and n+polling observations". Measured at
  polling 1 (the default), 5 and 10;
- `AutoGptPolicy` (AutoGPT 0.4, `autogpt/llm/chat.py` `chat_with_ai` and
  `autogpt/memory/message_history.py`): the newest messages, as many as fit the send budget
  (the model's token limit less 1,000 tokens reserved for the answer), and a running summary,
  "This reminds you of these events from your past:", into which a model call folds the
  messages that fell out of the budget since the last update;
- `MemGptPolicy` (MemGPT, arXiv:2310.08560, section 2.2, the queue manager): a memory-pressure
  warning once the prompt passes the warning token count (70% of the window); at the flush
  token count (100% of the window, counting the room the request asks for its answer) the
  oldest messages, about half of the window's tokens, are evicted into a recursive summary
  (the previous summary plus the evicted messages), under MemGPT's "prior messages (N of M
  total messages) have been hidden" note.

And Aider's repository map (`AiderMapPolicy`, aider/repomap.py and aider/coders/base_coder.py):
the map of the workspace (agent_server/repo_map, a port of Aider's) rendered again before
every call and put after the system prompt, before the history; personalised by the files
in the chat and what the current message mentions. It keeps the product's append-only
history and compaction (the head counted in the decision), so that what it changes is the
map alone: `aider-map` with Aider's default refresh (every call), `aider-map-files` with the
refresh Aider switches to when it caches prompts (only when the chat's files change).

The policies count tokens with the simulated model's own tokenizer, as AutoGPT and MemGPT
counted with tiktoken, so they never send a request they know to be too long. None of them
ever sends a tool result whose call is not in the message before it: window and eviction
boundaries move back to the assistant message that made the calls.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from agent_server.agent.context_manager import ContextManager, ContextPolicy, ContextView
from agent_server.agent.settings import ToolOptions
from agent_server.agent.tools.repo_map import mapped_files
from agent_server.context.cut_point import CutPoint
from agent_server.context.estimate import estimate_text_tokens
from agent_server.context.projection import is_prompt
from agent_server.context.trigger import CompactionSettings
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    calls_that_succeeded,
)
from agent_server.llm.models import ModelInfo
from agent_server.protocol import CacheRetentionSetting
from agent_server.repo_map import RepoMap
from agent_server.sim.tokenizer import count_tokens


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    label: str
    cache_retention: CacheRetentionSetting = "short"
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    policy: Callable[[], ContextPolicy] | None = None  # a fresh policy per run
    tools: ToolOptions = field(default_factory=ToolOptions)  # the repo_map tool, say


OFF = CompactionSettings(enabled=False)


def strategies() -> list[Strategy]:
    return [
        Strategy("default", "default (append-only, compaction, cached summary)"),
        Strategy(
            "fresh-summary",
            "default with a fresh summary prompt",
            compaction=CompactionSettings(summary="fresh"),
        ),
        Strategy("near-window", "default compacting only near the window (threshold 1)",
                 compaction=CompactionSettings(threshold=1)),
        Strategy("threshold-64k", "default compacting at 64k tokens (the default to stop 55)",
                 compaction=CompactionSettings(threshold=65_536)),
        Strategy("no-cache", "no caching (same history, no breakpoints)", cache_retention="none"),
        Strategy("auto-retention", "default with cacheRetention auto", cache_retention="auto"),
        Strategy("restore-files", "default with Claude Code's restore of recent files",
                 policy=RestoreRecentFiles),
        Strategy("repo-map-tool", "default with the repo_map tool",
                 tools=ToolOptions(repo_map=True)),
        Strategy("repo-map-tool-4k", "default with the repo_map tool, 4k-token maps",
                 tools=ToolOptions(repo_map=True, repo_map_tokens=4096)),
        *(
            Strategy(
                name, f"observation collapsing (SWE-agent, polling {polling})", compaction=OFF,
                policy=functools.partial(SweAgentPolicy, polling=polling),
            )
            for name, polling in SWE_AGENT_POLLING
        ),
        Strategy(
            "autogpt", "what fits the budget + running summary (AutoGPT)", compaction=OFF,
            policy=AutoGptPolicy,
        ),
        Strategy(
            "memgpt", "memory pressure + eviction (MemGPT)", compaction=OFF, policy=MemGptPolicy
        ),
        Strategy("aider-map", "repo map at the head, each call (Aider)", policy=AiderMapPolicy),
        Strategy(
            "aider-map-files", "repo map at the head, new chat files (Aider, --cache-prompts)",
            policy=functools.partial(AiderMapPolicy, refresh="files", name="aider-map-files"),
        ),
    ]


# --- shared pieces --------------------------------------------------------------------------


def message_tokens(message: Message) -> int:
    """What `message` costs in the simulated model's tokenizer (Anthropic rendering)."""
    total = 3
    if isinstance(message, ToolResultMessage):
        total += 5
        blocks: Sequence[object] = message.content
    else:
        blocks = message.content
    for block in blocks:
        if isinstance(block, TextContent):
            total += 1 + count_tokens(block.text)
        elif isinstance(block, ThinkingContent):
            total += 2 + count_tokens(block.thinking)
        elif isinstance(block, ToolCall):
            total += 6 + count_tokens(block.name)
            total += count_tokens(json.dumps(block.arguments, separators=(",", ":")))
        elif isinstance(block, ImageContent):
            total += 1600
    return total


def prefix_tokens(system_prompt: str, tools: Sequence[ToolSpec]) -> int:
    total = 5 + count_tokens(system_prompt)
    for tool in tools:
        schema = json.dumps(tool.parameters, sort_keys=True, separators=(",", ":"))
        total += 12 + count_tokens(tool.name) + count_tokens(tool.description)
        total += count_tokens(schema)
    return total


def request_tokens(view: ContextView, messages: Sequence[Message]) -> int:
    return prefix_tokens(view.system_prompt, view.tools) + sum(map(message_tokens, messages))


def safe_start(messages: Sequence[Message], start: int) -> int:
    """`start`, moved back to the assistant message whose calls the results at `start`
    answer, so that a history beginning there has no orphaned tool result."""
    while 0 < start < len(messages) and isinstance(messages[start], ToolResultMessage):
        start -= 1
    return start


def with_head(text: str, messages: Sequence[Message]) -> tuple[Message, ...]:
    """`text` at the head of `messages`: the first text of a leading user message (so that
    two user messages never sit in a row and a prompt stays its message's last text), or a
    user message of its own."""
    if messages and isinstance(messages[0], UserMessage):
        first = messages[0]
        return (UserMessage((TextContent(text), *first.content)), *messages[1:])
    return (UserMessage.of_text(text), *messages)


# --- SWE-agent ------------------------------------------------------------------------------

SWE_KEEP_OBSERVATIONS = 5  # LastNObservations(n=5) in SWE-agent's configs
SWE_AGENT_POLLING = (("swe-agent", 1), ("swe-agent-p5", 5), ("swe-agent-p10", 10))
SWE_AGENT_STUB = "Old environment output: ({lines} lines omitted)"


@dataclass
class SweAgentPolicy:
    """SWE-agent's LastNObservations: older tool outputs collapse in place to a one-line stub,
    the first one never; the cut moves every `polling` observations."""

    polling: int = 1
    n: int = SWE_KEEP_OBSERVATIONS
    name: str = "swe-agent"

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        results = [i for i, m in enumerate(view.messages) if isinstance(m, ToolResultMessage)]
        last_removed = max(0, (len(results) // self.polling) * self.polling - self.n)
        old = set(results[1:last_removed])
        out: list[Message] = []
        for index, message in enumerate(view.messages):
            if index in old and isinstance(message, ToolResultMessage):
                lines = message.text.count("\n") + 1
                stub = TextContent(SWE_AGENT_STUB.format(lines=lines))
                out.append(replace(message, content=(stub,)))
            else:
                out.append(message)
        return manager.view_of(out)


# --- AutoGPT --------------------------------------------------------------------------------

AUTOGPT_ANSWER_RESERVE = 1000  # chat_with_ai: "Reserve 1000 tokens for the response"
AUTOGPT_HEAD = "This reminds you of these events from your past:\n{summary}"


@dataclass
class AutoGptPolicy:
    """The newest messages that fit the send budget, and a running summary of the rest."""

    name: str = "autogpt"
    summary: str | None = None
    summarised_upto: int = 0  # view.messages[:summarised_upto] are in the summary

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        messages = view.messages
        budget = view.model.context_window - AUTOGPT_ANSWER_RESERVE
        start = self._fitting_start(view, messages, budget, self.summary)
        if start > self.summarised_upto:
            # What fell out of the budget since the last update is folded in (one call).
            self.summary = await manager.summarise(messages[self.summarised_upto : start],
                                                self.summary)
            self.summarised_upto = start
            start = max(start, self._fitting_start(view, messages, budget, self.summary))
        return manager.view_of(self._render(messages[max(start, self.summarised_upto) :]))

    def _fitting_start(self, view: ContextView, messages: Sequence[Message], budget: int,
                       summary: str | None) -> int:
        """The oldest start from which the newest messages (and the head) fit `budget`."""
        start = self.summarised_upto
        rendered = self._render(messages[start:], summary)
        while request_tokens(view, rendered) > budget and start + 1 < len(messages):
            start = _next_start(messages, start + 1)
            rendered = self._render(messages[start:], summary)
        return start

    def _render(self, kept: Sequence[Message], summary: str | None = None
                ) -> tuple[Message, ...]:
        summary = self.summary if summary is None else summary
        if summary is None:
            return tuple(kept)
        return with_head(AUTOGPT_HEAD.format(summary=summary), kept)


def _next_start(messages: Sequence[Message], start: int) -> int:
    """The first index at or after `start` that is not a tool result (or the last message)."""
    while start < len(messages) - 1 and isinstance(messages[start], ToolResultMessage):
        start += 1
    return start


# --- MemGPT ---------------------------------------------------------------------------------

MEMGPT_WARNING_FRACTION = 0.7
MEMGPT_WARNING = (
    "[System] Memory pressure warning: the conversation history will soon reach its maximum "
    "length and be trimmed. Make sure to save any important information from the "
    "conversation to your memory before it is removed."
)
MEMGPT_HEAD = (
    "Note: prior messages ({hidden} of {total} total messages) have been hidden from view due "
    "to conversation memory constraints.\nThe following is a summary of the previous "
    "messages:\n{summary}"
)


MEMGPT_EVICT_FRACTION = 0.5  # "evicts messages (e.g., 50% of the context window)"


@dataclass
class MemGptPolicy:
    """A warning at 70% of the window; at 100% the oldest messages, about half the window's
    tokens, evicted into a recursive summary."""

    name: str = "memgpt"
    summary: str | None = None
    kept_from: int = 0  # view.messages[kept_from:] is the message queue
    total_at_eviction: int = 0  # the head note's "N of M total messages", fixed when written
    warning_at: int | None = None  # the warning sits before view.messages[warning_at]

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        messages = view.messages
        full = memgpt_flush_tokens(view.model)
        sent = self._render(messages)
        for _ in range(8):
            if request_tokens(view, sent) <= full:
                break
            if not await self._evict_half(view, manager):
                break
            sent = self._render(messages)
        if (
            self.warning_at is None
            and request_tokens(view, sent) > MEMGPT_WARNING_FRACTION * view.model.context_window
        ):
            # Appended as the newest message; a pending prompt stays the last text sent.
            last = len(messages) - 1
            self.warning_at = last if isinstance(messages[last], UserMessage) else len(messages)
            sent = self._render(messages)
        return manager.view_of(sent)

    async def _evict_half(self, view: ContextView, manager: ContextManager) -> bool:
        """Evict the oldest messages until about half the window's tokens have gone."""
        messages = view.messages
        target = MEMGPT_EVICT_FRACTION * view.model.context_window
        cut, evicted_tokens = self.kept_from, 0
        while cut < len(messages) - 1 and evicted_tokens < target:
            evicted_tokens += message_tokens(messages[cut])
            cut += 1
        cut = safe_start(messages, cut)
        if cut <= self.kept_from:
            cut = _next_start(messages, self.kept_from + 1)
            if cut >= len(messages) - 1:
                return False
        evicted = messages[self.kept_from : cut]
        self.summary = await manager.summarise(evicted, self.summary)
        self.kept_from = cut
        self.total_at_eviction = len(messages)
        self.warning_at = None  # the pressure is relieved; warn again when it returns
        return True

    def _render(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        queue: list[Message] = list(messages[self.kept_from :])
        if self.warning_at is not None and self.warning_at >= self.kept_from:
            position = self.warning_at - self.kept_from
            warning = UserMessage.of_text(MEMGPT_WARNING)
            if position < len(queue) and isinstance(queue[position], UserMessage):
                target = queue[position]
                assert isinstance(target, UserMessage)
                queue[position] = UserMessage((*warning.content, *target.content))
            else:
                queue.insert(position, warning)
        if self.summary is None:
            return tuple(queue)
        head = MEMGPT_HEAD.format(
            hidden=self.kept_from, total=self.total_at_eviction, summary=self.summary
        )
        return with_head(head, queue)


def memgpt_flush_tokens(model: ModelInfo) -> int:
    """MemGPT's flush token count, 100% of the window: a prompt above the window less the
    answer the request asks room for (the model's output limit) no longer fits."""
    return model.context_window - model.max_output


def is_orphan_free(messages: Sequence[Message]) -> bool:
    """Every tool result answers a call of the assistant message before its run of results."""
    calls: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = {call.id for call in message.tool_calls}
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id not in calls:
                return False
        else:
            calls = set()
    return True


# --- what a compaction does with the files read (issue 26, item 5) ----------------------------

RESTORE_FILES = 5  # Claude Code restores up to 5 recently read files after a compaction,
RESTORE_FILE_TOKENS = 5_000  # up to 5k tokens each,
RESTORE_TOTAL_TOKENS = 50_000  # 50k in all (issue 26, item 5)
# On a smaller window the same share of the threshold: 50k is about 30% of the threshold of a
# 200k window with a 20k reserve.
RESTORE_SHARE_OF_THRESHOLD = 0.3


class RestoreRecentFiles:
    """The product's policy, plus Claude Code's restore: when a compaction runs, the files
    most recently read in the part it summarises (and not read again in the part it keeps),
    as they are on disk now, are attached after the summary (the lines of the latest read of
    each, up to RESTORE_FILE_TOKENS, RESTORE_FILES files, RESTORE_TOTAL_TOKENS and
    RESTORE_SHARE_OF_THRESHOLD of the threshold in all), so that the model need not read
    them again. The product instead lists the paths (the summary's Files read and Files
    modified) and the model reads what it needs, when it needs it. The block rides in the
    compaction's summary, so it is in the ledger, every later request and the next summary
    request, like the rest of the summary."""

    name = "restore-files"

    def __init__(self, workspace: Path | None = None) -> None:
        self.workspace = workspace or Path()  # the session's, read when a compaction runs

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        decision = manager.decide(view)
        reason = decision.reason
        if decision.action != "compact" or reason is None or reason == "oversized":
            return view
        self.workspace = Path(manager.ledger.header.workspace)
        budget = min(RESTORE_TOTAL_TOKENS, int(RESTORE_SHARE_OF_THRESHOLD * manager.threshold))
        # The summaries the compaction's engine writes with: a swap anywhere else is not seen.
        engine = manager.compactor.engine
        original = engine.summaries
        engine.summaries = _Restoring(original, self, budget)  # type: ignore[assignment]
        try:
            result = await manager.compact(reason, view=view)
        finally:
            engine.summaries = original
        return result.view

    def restored(self, cut: CutPoint, budget: int) -> str:
        """The block attached after a summary for `cut`: "" when no file qualifies."""
        kept = {path for path, _ in _reads(m.message for m in cut.kept)}
        chosen: list[tuple[str, dict[str, Any]]] = []
        for path, arguments in reversed(_reads(
            m.message for m in (*cut.summarize, *cut.turn_prefix)
        )):
            if path not in kept and path not in (p for p, _ in chosen):
                chosen.append((path, arguments))
            if len(chosen) == RESTORE_FILES:
                break
        parts: list[str] = []
        for path, arguments in chosen:
            text = self._lines(path, arguments, min(RESTORE_FILE_TOKENS, budget))
            if text is None:
                continue
            budget -= estimate_text_tokens(text)
            parts.append(text)
            if budget <= 0:
                break
        if not parts:
            return ""
        return "\n\n## Files read before this point, as they are now\n\n" + "\n\n".join(parts)

    def _lines(self, path: str, arguments: dict[str, Any], tokens: int) -> str | None:
        root = self.workspace.resolve()
        file = (root / path).resolve()
        if not file.is_relative_to(root) or not file.is_file():
            return None
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        offset = arguments.get("offset")
        first = offset if isinstance(offset, int) and offset >= 1 else 1
        limit = arguments.get("limit")
        count = limit if isinstance(limit, int) and limit >= 1 else len(lines)
        shown: list[str] = []
        used = 0
        for line in lines[first - 1 : first - 1 + count]:
            used += estimate_text_tokens(line + "\n")
            if used > tokens:
                break
            shown.append(line)
        if not shown:
            return None
        last = first + len(shown) - 1
        return f'<file path="{path}" lines="{first}-{last}">\n' + "\n".join(shown) + "\n</file>"


def _reads(messages: Iterable[Message]) -> list[tuple[str, dict[str, Any]]]:
    """(path, arguments) of each read tool call, oldest first."""
    found: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                path = call.arguments.get("path")
                if call.name == "read" and isinstance(path, str):
                    found.append((path, dict(call.arguments)))
    return found


class _Restoring:
    """The session's summaries, with the restored files attached after each compaction's."""

    def __init__(self, summaries: Any, policy: RestoreRecentFiles, budget: int) -> None:
        self._summaries = summaries
        self._policy = policy
        self._budget = budget

    def __getattr__(self, name: str) -> Any:
        return getattr(self._summaries, name)

    async def of_compaction(self, projection: Any, tokens: int, cut: CutPoint,
                            *args: Any, **kwargs: Any) -> tuple[str, str | None]:
        summary, split = await self._summaries.of_compaction(projection, tokens, cut, *args,
                                                             **kwargs)
        if not summary:
            return summary, split
        return summary + self._policy.restored(cut, self._budget), split


# --- Aider ----------------------------------------------------------------------------------

# aider/coders/base_prompts.py, CoderPrompts.repo_content_prefix, and the assistant's answer
# in base_coder.py, Coder.get_repo_messages.
AIDER_MAP_PREFIX = (
    "Here are summaries of some files present in my git repository.\n"
    "Do not propose changes to these files, treat them as *read-only*.\n"
    "If you need to edit any of these files, ask me to *add them to the chat* first.\n"
)
AIDER_MAP_REPLY = "Ok, I won't try and edit those files without asking first."
AIDER_NO_FILES_MULTIPLIER = 2  # aider/args.py, --map-multiplier-no-files
AIDER_PADDING = 4096  # RepoMap.get_repo_map: the room kept when the map grows
# The tools whose calls put a file's text into the context: Aider's "files in the chat".
_FILE_TOOLS = frozenset(("read", "edit", "write"))


def aider_map_tokens(model: ModelInfo) -> int:
    """aider/models.py, Model.get_repo_map_tokens: an eighth of the input window, within
    [1024, 4096] (the --map-tokens default; the docs' "1k tokens" is its floor)."""
    return int(min(max(model.context_window / 8, 1024), 4096))


@dataclass
class AiderMapPolicy:
    """Aider's repository map at the head of every request (aider/repomap.py and
    aider/coders/base_coder.py), on top of the product's append-only history and compaction.

    Before each model call (Aider builds its chunks, `format_chat_chunks`, for every call) the
    map is rendered again (`Coder.get_repo_map`): the files in the chat are the files whose
    text the context holds (read, edited or written by the session); the files and names
    mentioned are those of the current message's text, that is, everything said since the
    latest prompt (the prompt, the answers, the tools' outputs, file texts aside)
    (`get_file_mentions`, `get_ident_mentions`, `get_ident_filename_matches`); its budget is
    `aider_map_tokens`, grown to twice that (at most the window less 4,096) while no file is
    in the chat; when nothing fits it falls back to the map without the chat files, then to
    the unhinted one. It goes after the system prompt and before the history, as a user
    message (`repo_content_prefix` + map) and the assistant's "Ok" (`ChatChunks`: system,
    examples, read-only files, repo, done, chat files, current).

    `refresh`: "auto" renders it anew for every call (Aider's default; Aider reuses the last
    map for the same inputs only once a map took over a second to render: left out, as it
    depends on the machine's speed); "files" reuses it until the files in the chat (or the
    repository's files) change, which is what Aider switches to with --cache-prompts
    (aider/main.py: `if args.cache_prompts and args.map_refresh == "auto"`).

    The compaction decision counts the head; the compaction itself is the product's, on the
    ledger's history (Aider's own history summariser, ChatSummary, is not part of this
    baseline: it measures the map)."""

    refresh: Literal["auto", "files"] = "auto"
    name: str = "aider-map"
    _map: RepoMap | None = None
    _cached: tuple[tuple[object, ...], str] | None = None

    async def prepare(self, view: ContextView, manager: ContextManager) -> ContextView:
        head = self._head(view, manager)
        counted = request_tokens(view, (*head, *view.messages))
        decision = manager.decide(replace(view, estimate=replace(
            view.estimate, tokens=max(view.tokens, counted))))
        reason = decision.reason
        if decision.action == "compact" and reason is not None and reason != "oversized":
            view = (await manager.compact(reason, view=view)).view
            head = self._head(view, manager)
        return manager.view_of((*head, *view.messages))

    def _head(self, view: ContextView, manager: ContextManager) -> tuple[Message, ...]:
        root = Path(manager.ledger.header.workspace)
        if self._map is None:
            self._map = RepoMap(root, count_tokens)
        files = sorted(mapped_files(root)[0])
        chat = sorted(files_in_chat(view.messages) & set(files))
        text = current_message_text(view.messages)
        idents = set(re.split(r"\W+", text)) - {""}
        mentioned = file_mentions(text, files, chat) | ident_file_matches(idents, files)
        key = (tuple(chat), tuple(files), view.model.id)
        if self.refresh == "files" and self._cached is not None and self._cached[0] == key:
            listing = self._cached[1]
        else:
            listing = self._render(view.model, chat, files, mentioned, idents)
            self._cached = (key, listing)
        if not listing:
            return ()
        return (UserMessage.of_text(AIDER_MAP_PREFIX + listing),
                AssistantMessage((TextContent(AIDER_MAP_REPLY),), "stop"))

    def _render(self, model: ModelInfo, chat: list[str], files: list[str],
                mentioned: set[str], idents: set[str]) -> str:
        """Coder.get_repo_map and RepoMap.get_repo_map: the budget, and the two fallbacks."""
        assert self._map is not None
        budget = aider_map_tokens(model)
        if not chat:
            budget = min(budget * AIDER_NO_FILES_MULTIPLIER, model.context_window - AIDER_PADDING)
        other = [path for path in files if path not in chat]
        for chat_files, hints in ((chat, True), ([], True), ([], False)):
            listing = self._map.render(
                chat_files, other if chat_files else files, budget,
                mentioned if hints else (), idents if hints else ())
            if listing:
                return listing
        return ""


def files_in_chat(messages: Sequence[Message]) -> set[str]:
    """The files whose text the context holds: paths of read, edit and write calls that did
    not fail."""
    paths = (
        call.arguments.get("path")
        for call, _ in calls_that_succeeded(messages)
        if call.name in _FILE_TOOLS
    )
    return {path.removeprefix("./") for path in paths if isinstance(path, str)}


def current_message_text(messages: Sequence[Message]) -> str:
    """Aider's `get_cur_message_text`: what was said since the latest prompt, file texts
    (which Aider keeps in the chat files' chunk, not in the current messages) aside."""
    start = max((i for i, m in enumerate(messages) if is_prompt(m)), default=0)
    calls: dict[str, ToolCall] = {}
    parts: list[str] = []
    for message in messages[start:]:
        if isinstance(message, AssistantMessage):
            calls.update((call.id, call) for call in message.tool_calls)
            parts.append(message.text)
        elif isinstance(message, ToolResultMessage):
            call = calls.get(message.tool_call_id)
            if call is None or call.name not in _FILE_TOOLS:
                parts.append(message.text)
        elif isinstance(message, UserMessage):
            parts.extend(b.text for b in message.content if isinstance(b, TextContent))
    return "\n".join(parts)


def file_mentions(text: str, files: Sequence[str], chat: Sequence[str]) -> set[str]:
    """Aider's `get_file_mentions`: files (not in the chat) named by their path, or by a base
    name unique among them that could not be a plain word."""
    words = {word.rstrip(",.!;:?").strip("\"'`*_") for word in text.split()}
    addable = [path for path in files if path not in chat]
    in_chat = {PurePosixPath(path).name for path in chat}
    found = {path for path in addable if path in words}
    by_name: dict[str, list[str]] = {}
    for path in addable:
        name = PurePosixPath(path).name
        if any(c in name for c in "/\\._-"):
            by_name.setdefault(name, []).append(path)
    for name, paths in by_name.items():
        if name not in in_chat and len(paths) == 1 and name in words:
            found.add(paths[0])
    return found


def ident_file_matches(idents: set[str], files: Sequence[str]) -> set[str]:
    """Aider's `get_ident_filename_matches`: files whose stem (5 characters or more) is a
    mentioned name of 5 characters or more, case aside."""
    stems: dict[str, set[str]] = {}
    for path in files:
        stem = PurePosixPath(path).stem.lower()
        if len(stem) >= 5:
            stems.setdefault(stem, set()).add(path)
    return {path for ident in idents if len(ident) >= 5
            for path in stems.get(ident.lower(), set())}
