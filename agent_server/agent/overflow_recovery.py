"""The one overflow recovery of a prompt (invariant 8 of DESIGN.md), and what a context too
large for the window is told.

A context the provider rejected as too long, or one not sent because it is known not to fit
(context.decision.decide: `unsendable`), gets one compaction with a fresh, bounded summary
prompt (never a resend of the rejected request), and one retry only if that made it smaller
and below the threshold (context.decision: `decide_overflow`, `retries_after_overflow`);
otherwise the error surfaces, saying what to do. A rejected context is remembered: a later
one that holds it (nothing compacted since) is not sent to be rejected again. A local
server that cut the start of a request without saying so is told once
(`check_answer_read`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal, TypeAlias

from agent_server.agent.context_view import CompactionResult, ContextView
from agent_server.agent.events import EventSink, Notice, OverflowHappened
from agent_server.agent.session_config import ContextConfig
from agent_server.context.decision import (
    ContextDecision,
    OverflowStep,
    Unsendable,
    decide_overflow,
    retries_after_overflow,
    server_reserve,
)
from agent_server.context.estimate import (
    estimate_text_floor,
    estimate_weighted_tokens,
    has_real_usage,
)
from agent_server.context.projection import is_prompt
from agent_server.errors import ContextOverflowError
from agent_server.llm.messages import AssistantMessage, Message, TextContent, ToolResultMessage
from agent_server.llm.overflow import cut_without_saying
from agent_server.session.entries import MessageEntry
from agent_server.stderr_log import shorten

log = logging.getLogger(__name__)

# How the front end lets the user rewind, which the advice of an overflow it cannot recover
# from follows: to an entry, by its id ("entry": the editor); to before a prompt picked from
# a numbered list ("prompt": the terminal's /rewind); not at all ("none": an ACP editor).
RewindBy: TypeAlias = Literal["entry", "prompt", "none"]
# How an overflow was found: the provider rejected the request, or its estimate was too large.
Rejection = Literal["rejected", "estimated"]

# The overflow compaction of a view (the context manager's `compact("overflow", view=...)`).
CompactForOverflow = Callable[[ContextView], Awaitable[CompactionResult]]


class OverflowRecovery:
    """The overflow recovery of one session and its state: whether the current prompt spent
    its one recovery (`recovered`), the last context the provider rejected as too long, and
    whether a silent cut was said. `decide` is the decision on a view (context.decision.decide
    with what the manager reads), `prefix_tokens` the system prompt's and tools' estimate."""

    def __init__(
        self,
        *,
        config: ContextConfig,
        emit: EventSink,
        turn_id: Callable[[], str | None],
        compact: CompactForOverflow,
        decide: Callable[[ContextView], ContextDecision],
        prefix_tokens: Callable[[], int],
        rewind: RewindBy = "entry",
    ) -> None:
        self._config = config
        self._emit = emit
        self._turn_id = turn_id
        self._compact = compact
        self._decide = decide
        self._prefix_tokens = prefix_tokens
        self.rewind = rewind
        self.recovered = False  # the current prompt's one recovery ran
        self._rejected: tuple[str, ContextView] | None = None  # (model id, the view)
        self._cut_said = False  # a local server cut the prompt without saying so: said once

    def holds_rejected(self, view: ContextView) -> bool:
        """Whether `view` extends the context the provider last rejected as too long: same
        model, same latest compaction, and the rejected context's last entry on its path."""
        if self._rejected is None or view.projection is None:
            return False
        model_id, rejected = self._rejected
        if model_id != self._config.model.id or rejected.projection is None or not rejected.entries:
            return False
        last = rejected.entries[-1].id
        same_start = _compaction_id(rejected) == _compaction_id(view)
        return same_start and any(entry.id == last for entry in view.entries)

    def problem(self, view: ContextView, unsendable: Unsendable) -> str:
        """Why `view` is not sent (the decision found it `unsendable`)."""
        model = self._config.model
        if unsendable == "window":
            return (
                f"The request would be about {view.tokens:,} tokens, over {model.id}'s "
                f"context window of {model.context_window:,}: it was not sent."
            )
        return (
            f"The request holds one {model.id} already rejected as too long (nothing "
            "was compacted since): it was not sent."
        )

    async def recover(
        self,
        view: ContextView,
        problem: str,
        *,
        rejected: bool,
        server_window: int | None = None,
    ) -> ContextView:
        """The one overflow recovery of the current prompt (the context manager's
        `recover_overflow` says what each argument is)."""
        model, settings = self._config.model, self._config.compaction
        turn_id = self._turn_id() or ""
        kind: Rejection = "rejected" if rejected else "estimated"
        if rejected and view.entries:
            self._rejected = (model.id, view)
        step = decide_overflow(
            model,
            settings,
            recovered=self.recovered,
            server_window=server_window,
            prefix_tokens=self._prefix_tokens(),
        )
        if step in ("server window", "server too small"):
            assert server_window is not None
            mismatch = self._mismatch(step, server_window)
            log.info("overflow: %s", shorten(problem, 500))
            self._emit(OverflowHappened(turn_id, kind, "gaveUp", mismatch))
            raise ContextOverflowError(mismatch)
        if step == "spent":
            raise self._give_up(turn_id, kind, view)
        # What happens, not the provider's advice to the user (its "compact and try again"
        # is what is being done): the provider's words go to the log.
        if rejected:
            log.info("overflow: %s", shorten(problem, 500))
            what = (
                f"{model.id} refused the request as too long for its context window "
                f"({model.context_window:,} tokens)."
            )
        else:
            what = problem
        self._emit(
            OverflowHappened(
                turn_id,
                kind,
                "compacting",
                f"{what} Compacting the history once, then retrying.",
            )
        )
        result = await self._compact(view)
        after = result.view
        compacted = result.outcome == "compacted"
        if retries_after_overflow(view.tokens, self._decide(after), model, settings,
                                  compacted=compacted):
            self._emit(
                OverflowHappened(
                    turn_id,
                    kind,
                    "retrying",
                    f"Compacted the history ({view.tokens} -> {after.tokens} tokens); "
                    "retrying once.",
                )
            )
            return after
        raise self._give_up(turn_id, kind, after)

    def _give_up(
        self, turn_id: str, kind: Rejection, view: ContextView
    ) -> ContextOverflowError:
        message = self.gave_up_message(view)
        self._emit(OverflowHappened(turn_id, kind, "gaveUp", message))
        return ContextOverflowError(message)

    def _mismatch(self, step: OverflowStep, server_window: int) -> str:
        """What to do when the server says its window is below the one configured for a
        model only it knows (the `contextWindow` setting, or the model's entry in the
        models file)."""
        model = self._config.model
        said = (
            f"The server refused the request as too long: it says {model.id} takes at most "
            f"{server_window:,} tokens, less than the {model.context_window:,} agent-server "
            "was told ('contextWindow'), so compacting for that window would not help."
        )
        if step == "server too small":
            reserve = server_reserve(model, self._config.compaction, server_window)
            return (
                f"{said} {server_window:,} tokens is too small for agent-server (the system "
                f"prompt and tools, and {reserve:,} tokens kept for the answer): start the "
                "server with a larger context (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx; "
                "llama.cpp: -c; vLLM: --max-model-len) and set 'contextWindow' to it."
            )
        return (
            f"{said} Set 'contextWindow' to {server_window} (the setting, or the model's "
            "entry in the models file), or start the server with a larger context and set "
            "'contextWindow' to that."
        )

    def gave_up_message(self, view: ContextView) -> str:
        """Why the request cannot be sent, naming the largest message and what to do."""
        model = self._config.model
        largest = _largest_message(view)
        what = ""
        if largest is not None:
            entry_id, message, tokens = largest
            about = f" The largest message is {_describe(message)}"
            if self.rewind == "entry":
                where = f" (entry {entry_id})" if entry_id else ""
                what = (
                    f"{about}{where}, about {tokens:,} tokens: rewind to before it, or "
                    "shorten it."
                )
            elif self.rewind == "prompt":
                what = (
                    f"{about}, about {tokens:,} tokens: /rewind to before "
                    f"{_prompt_before(view, entry_id)}, or shorten it."
                )
            else:
                what = (
                    f"{about}, about {tokens:,} tokens: start a new session and give it less "
                    "at once (a smaller message, a file to read in parts)."
                )
        enabled = self._config.compaction.enabled
        off = "" if enabled else " Automatic compaction is off (compaction.enabled)."
        return (
            f"The request is too large for {model.id}'s context window "
            f"({model.context_window:,} tokens) and compacting could not make it fit.{what}{off}"
        )

    def check_answer_read(self, view: ContextView, answer: AssistantMessage) -> None:
        """Say once per session when a local server's answer to `view` reports fewer prompt
        tokens than the chars/4 floor of what was sent: the server cut the start of the
        conversation without an error (Ollama past its `num_ctx`), and the model has not seen
        the system prompt or the first messages. Nothing is compacted: the window the server
        serves is the fix, not a smaller request."""
        model = self._config.model
        if self._cut_said or model.vendor != "local" or not has_real_usage(answer):
            return
        assert answer.usage is not None
        reported = answer.usage.prompt_tokens
        # chars/4 of the whole context (the view's, already counted) bounds the floor from
        # above: a server that read that much is not suspected, and the floor is not walked.
        if not cut_without_saying(reported, view.estimate.full_estimate):
            return
        floor = estimate_text_floor(view.context)
        if not cut_without_saying(reported, floor):
            return
        self._cut_said = True
        self._emit(Notice(self._turn_id(), "warning", (
            f"The server says it read {reported:,} prompt tokens of a request of at least "
            f"{floor:,} tokens: it cut the start of the conversation without saying so, and "
            f"{model.id} has not seen the system prompt or the first messages. Start the "
            "server with a larger context (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx; "
            "llama.cpp: -c; vLLM: --max-model-len) and set 'contextWindow' to it."
        )))


def _compaction_id(view: ContextView) -> str | None:
    compaction = view.compaction
    return compaction.id if compaction is not None else None


def _largest_message(view: ContextView) -> tuple[str | None, Message, int] | None:
    """(entry id, message, tokens) of the largest message of the view."""
    best: tuple[str | None, Message, int] | None = None
    for index, message in enumerate(view.messages):
        tokens = estimate_weighted_tokens(message)
        if best is None or tokens > best[2]:
            entry_id = view.projection.entry_ids[index] if view.projection is not None else None
            best = (entry_id, message, tokens)
    return best


def _prompt_before(view: ContextView, entry_id: str | None) -> str:
    """The user's prompt at or before the entry `entry_id` in `view`, as /rewind lists it
    (its first words), or a description when the view does not hold it."""
    index = next((i for i, e in enumerate(view.entries) if e.id == entry_id), None)
    for entry in reversed(view.entries[: index + 1] if index is not None else ()):
        message = entry.message if isinstance(entry, MessageEntry) else None
        if message is not None and is_prompt(message):
            typed = " ".join(b.text for b in message.typed if isinstance(b, TextContent))
            words = " ".join(typed.split())
            return f'your prompt "{words[:60]}{"…" if len(words) > 60 else ""}"'
    return "the prompt that brought it in"


def _describe(message: Message) -> str:
    if isinstance(message, ToolResultMessage):
        return f"the result of the tool call {message.tool_name}"
    if isinstance(message, AssistantMessage):
        return "an answer of the model"
    return "an editor note" if message.note is not None else "a message of yours"
