"""Which engine writes a compaction's summary, and the provider's own compaction.

The setting `compaction.engine` chooses: `local` (the default: agent-server's summary
requests, agent/summary_request.py) or `provider`, where the session's provider compacts on
request (llm/providers.py says which: `WireApi.compaction`):

- Anthropic: on-demand compaction (`compaction: {type: "summarize"}`), answered with one
  signed `compaction` block whose summary is readable;
- OpenAI Responses: `POST /responses/compact` (as Codex's remote compaction), answered with
  the user's messages and one encrypted `compaction` item that only OpenAI can read.

Everything else is the same as with a local summary: the same decision (when), the same cut
(what is kept verbatim), the same entry in the ledger (the provider's block or items kept as
returned, `CompactionEntry.provider`), the same events, overflow recovery and rewinds. The
request sent is the projected context up to the cut, with the session's system prompt and
tools, so that the provider reads the cached prefix; the previous compaction, when there is
one, opens it, so the provider folds it in (iterative, invariant 7). The session's model
writes it (`compaction.model` is for local summaries).

A provider compaction that fails (the model does not offer it, the request is refused, no
compaction comes back) falls back to a local summary, with a notice, within the same
compaction: one compaction, whatever wrote it. So does a session whose provider has no
compaction of its own (said once).

Also here: the provider's clearing of old tool results (`compaction.clearToolResults`,
Anthropic's context editing), an opt-in strategy of its own; and which compactions a
provider can read (`readable_compaction`): an encrypted one only by the API that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_server.agent.session_config import ContextConfig
from agent_server.agent.summary_request import ModelCall, Summaries
from agent_server.context.cut_point import CutPoint
from agent_server.context.estimate import estimate_context_tokens
from agent_server.context.projection import Projection
from agent_server.context.summary_prompt import ENCRYPTED_SUMMARY_NOTE, SUMMARY_OUTPUT_TOKENS
from agent_server.context.trigger import CompactionSettings, compaction_threshold
from agent_server.errors import ProviderError
from agent_server.llm.messages import CompactionContent, Context, ToolSpec, Usage
from agent_server.llm.models import ModelInfo
from agent_server.llm.providers import clears_tool_results, compacts
from agent_server.llm.stream import CompactionCall, ToolResultClearing
from agent_server.session.entries import (
    Carried,
    CompactionDetails,
    CompactionEntry,
    CompactionReason,
)

# Context editing: the tool uses kept whole, and the clearing's trigger as a share of the
# compaction threshold (clearing only helps below it).
CLEAR_KEEP_TOOL_USES = 3
CLEAR_TRIGGER_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class CompactionSummary:
    """What a compaction records: the summary (and split-turn summary) and, when the provider
    compacted, its block or items."""

    summary: str
    split_turn_summary: str | None = None
    provider: CompactionContent | None = None


def readable_compaction(compaction: CompactionEntry, api: str) -> bool:
    """Whether a request to `api` can carry `compaction`: ours always; a provider's when it
    made it, or when its summary is readable text (Anthropic's)."""
    provider = compaction.provider
    return provider is None or provider.api == api or bool(provider.summary)


def tool_result_clearing(
    model: ModelInfo, settings: CompactionSettings, api: str
) -> ToolResultClearing | None:
    """The provider's clearing of old tool results the session asks for, if it can: past
    half the compaction threshold, all but the last CLEAR_KEEP_TOOL_USES tool uses, when that
    clears at least the tail a compaction keeps (each clearing rewrites the cache after the
    first result it clears, so a small one would cost more than it saves)."""
    if not settings.clear_tool_results or not clears_tool_results(api):
        return None
    threshold = compaction_threshold(model, settings)
    return ToolResultClearing(
        trigger=max(int(threshold * CLEAR_TRIGGER_SHARE), 1),
        keep=CLEAR_KEEP_TOOL_USES,
        clear_at_least=settings.keep_recent_tokens,
    )


class CompactionEngine:
    """Writes the summaries of one session's compactions, with the engine the settings ask
    for (read from `config` on every use)."""

    def __init__(
        self,
        *,
        summaries: Summaries,
        call: ModelCall,
        config: ContextConfig,
        system_prompt: str,
        tools: Callable[[], tuple[ToolSpec, ...]],
        notice: Callable[[str], None],
        on_cache_use: Callable[[], None],
    ) -> None:
        self.summaries = summaries  # a benchmark variant wraps them (restore-files)
        self._call = call
        self._config = config
        self._system_prompt = system_prompt
        self._tools = tools
        self._notice = notice
        self._on_cache_use = on_cache_use
        self._said_unsupported: str | None = None  # the API it was said for

    @property
    def by_provider(self) -> bool:
        """Whether the next compaction asks the provider (the setting, and it can)."""
        if self._config.compaction.engine != "provider":
            return False
        if compacts(self._config.api):
            return True
        if self._said_unsupported != self._config.api:
            self._said_unsupported = self._config.api
            self._notice(
                f"compaction.engine is \"provider\", but {self._config.api} has no compaction "
                "of its own: agent-server writes the summaries."
            )
        return False

    async def summarise(
        self,
        projection: Projection,
        tokens: int,
        cut: CutPoint,
        reason: CompactionReason,
        *,
        instructions: str | None,
        details: CompactionDetails,
        shares_cache: bool,
        spent: list[Usage],
        carried: Carried | None = None,
    ) -> CompactionSummary:
        """The summary of what `cut` folds away from `projection` (of `tokens` tokens);
        `carried`: what the compaction carries verbatim beside it (context/carried.py)."""
        if self.by_provider:
            # After an overflow the estimate is known to be low: by at least window/estimate.
            low = self._config.model.context_window / tokens if reason == "overflow" else 1.0
            folded = self._folded(projection, cut, max(low, 1.0))
            if folded is None:
                self._notice(
                    "The history to summarise is larger than the model's window, so the "
                    "provider cannot compact it on its side: agent-server writes the summary "
                    "(from a bounded prompt)."
                )
            else:
                try:
                    return await self._by_provider(folded, instructions, spent)
                except ProviderError as error:
                    self._notice(
                        f"The provider's compaction failed ({error.message}); agent-server "
                        "writes the summary instead."
                    )
        summary, split = await self.summaries.of_compaction(
            projection, tokens, cut, reason, instructions=instructions, details=details,
            shares_cache=shares_cache, spent=spent, carried=carried,
        )
        return CompactionSummary(summary, split)

    def _folded(self, projection: Projection, cut: CutPoint, low: float) -> Context | None:
        """The request the provider summarises: the projected context up to the cut (the
        previous compaction first), with the session's prefix; None when it cannot fit the
        window beside the summary (the provider would refuse it as too long), its estimate
        scaled up by `low`."""
        messages = projection.messages
        kept_from = (
            projection.message_index(cut.first_kept_entry_id)
            if cut.first_kept_entry_id is not None else None
        )
        context = Context(self._system_prompt, self._tools(),
                          messages if kept_from is None else messages[:kept_from])
        model = self._config.model
        tokens = int(estimate_context_tokens(context, fresh_from=0).tokens * low)
        if tokens + min(SUMMARY_OUTPUT_TOKENS, model.max_output) > model.context_window:
            return None
        return context

    async def _by_provider(
        self, context: Context, instructions: str | None, spent: list[Usage],
    ) -> CompactionSummary:
        model = self._config.model
        answer = await self._call(
            context, model, "read", min(SUMMARY_OUTPUT_TOKENS, model.max_output),
            CompactionCall(instructions),
        )
        self._on_cache_use()
        if answer.usage is not None:
            spent.append(answer.usage)
        block = next(
            (item for item in answer.content if isinstance(item, CompactionContent)), None
        )
        if block is None:
            raise ProviderError("it returned no compaction")
        return CompactionSummary(block.summary or ENCRYPTED_SUMMARY_NOTE, provider=block)
