"""What the simulated model says next: a scenario step, a detour the step needs, the fallback,
or a summary.

The choice is read from the request alone (deterministic, so retries and compactions are
safe), but for one count the request cannot hold (`Refetches`: how often a need was fetched
again over the run, which a compaction with a summary that does not say so erases):

1. The last user message holds tool results: the first result whose id the simulator made
   (`toolu_sim_<turn>_<step>_<i>_<nonce>`, `call_sim_...`) gives turn and step; the answer is
   step + 1 of that turn (the same step again after a detour's results:
   `..._<step>d<need>_...`). A new prompt after the results wins over them (below).
2. Otherwise its last text block is a prompt: the scenario turn whose `user` text equals it
   (whitespace-normalised) answers with its first step. Failing that, a request for a summary
   (`summary_requests.is_summary_request`: read from its words, the same for every client)
   gets the summary; failing that, the turn whose `user` text is contained in the message (a
   client that adds its own instructions around the user's words) answers.
3. A request that ends with a summary handed over after a compaction in the middle of a turn
   (the turn's prompt kept before it, as Codex does, or only quoted in it, or dropped) takes
   that turn up again: at the step after the last one the summary says was done (a faithful
   summary's `## Where the work stands`), or, when it does not say, at its last step, the
   answer, whose needs fetch what is missing; with no prompt kept or quoted, it gets the
   fallback, recorded as a violation of the latest request.
4. Anything else gets the fallback: `ls .` if an `ls` tool is offered, then `read` of the first
   file that listing names, then a text answer that says what it saw and echoes the prompt
   (turn index `f` in the ids).

Before a step that names facts it relies on (`Step.needs`), the knowledge gate
(`knowledge.py`) looks for each in the request: a missing one is fetched again (a detour: the
step's turn and step, `d` and the need's index in the ids) or acted on wrongly, and the step
follows. A step that explores (`Step.finds`) is skipped when the request already shows what
it looks for, or preceded by a call of the repository map when one is declared and none is in
the request (`exploration.py`; `m` after the step in the ids). A step that reads a stretch of
a file to see all of it (`Step.sees`) is followed, when its results were cut before those
lines, by reads on from where they stop (`reading.py`; `c` after the step in the ids), and
then by the next step.

The nonce in an id (a digest of the whole conversation the request carries) keeps ids unique
within a conversation when the same turn runs twice, or after a failed turn left a partial answer
in the history: a later request always carries more, so its digest differs. It plays no part in
choosing the step.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agent_server.sim.exploration import MAP_CALL, all_shown, focus, wants_map
from agent_server.sim.knowledge import (
    FactCheck,
    Gate,
    check_needs,
    narrowed_run,
    recalled_entry,
    saved_output_search,
)
from agent_server.sim.reading import MAX_READS_ON, read_on
from agent_server.sim.scenario import FETCHABLE, Fact, Scenario, Step, ToolInvocation
from agent_server.sim.summary import (
    SummaryMode,
    said_before_last_call,
    serialised_calls,
    summarise,
)
from agent_server.sim.summary_requests import is_summary_handoff, is_summary_request
from agent_server.sim.tokenizer import filler_text
from agent_server.sim.tool_fitting import fit_call, working_directory
from agent_server.sim.transcript import (
    ToolCallPart,
    ToolResultPart,
    Transcript,
    TranscriptMessage,
    is_context_block,
    trailing_texts,
)

FALLBACK_TURN = "f"
LATEST_REQUEST = "latest-request"  # the fact a request without its prompt lacks
_CALL_ID = re.compile(
    r"^(?:toolu|call|fc)_sim_(?P<turn>\d+|f)_(?P<step>\d+)"
    r"(?:d(?P<detour>\d+)(?P<saved>s)?(?P<recall>r)?(?P<open>o)?|(?P<explore>m)|(?P<more>c))?"
    r"_(?P<index>\d+)(?:_[A-Za-z0-9]+)?$"
)
_ECHO_LIMIT = 400
_FETCH_TEXT = "I no longer have {about} in front of me, so I will look at it again."
_SEARCH_TEXT = "The output I was shown was cut; let me find {about} in the full output it saved."
_RECALL_TEXT = "That is no longer in front of me; let me look up {about} in this session's history."
_NARROW_TEXT = ("That output was compacted away before I could read it; let me run it again "
                "for {about} alone.")
_OPEN_TEXT = "The search shows part of {about}; let me read that entry from there."
_OPEN_BEFORE = 3
# A faithful summary's note of where the work stands (`_progress`), read back by `_done_in`.
_PROGRESS = "The last step done: step {step} of request {turn}."
_PROGRESS_SAID = re.compile(r"The last step done: step (?P<step>\d+) of request (?P<turn>\d+)\.")
# Its note when the conversation was serialised (no step ids): the last call made, as JSON.
_LAST_CALL = "The last call made: {call}"
_LAST_CALL_SAID = re.compile(r"The last call made: (?P<call>\[.*\])$", re.MULTILINE)
_LAST_CALL_CHARS = 400
# ... and when that call was a fetch again (the model said so before it: _FETCH_TEXT).
_FETCHING = "That call fetched again what a step needed."
# ... and, when the history was cut while a step's needs were being fetched again, which of
# them were: their results were compacted away before the step was taken, and a model taken
# up there does not fetch them once more (an output too large for the window would overflow
# it again, for ever). A later summary of the same step keeps the earlier ones.
_REFETCHED = ("Fetched again for step {step} of request {turn}, then compacted away: needs "
              "{needs}.")
_REFETCHED_SAID = re.compile(r"Fetched again for step (?P<step>\d+) of request (?P<turn>\d+), "
                             r"then compacted away: needs (?P<needs>\d+(?:, \d+)*)\.")
_READ_ON_TEXT = "That was cut before the end of what I am reading; let me read on from line {line}."
RECALL_CALL = "recall"
# Where the model looks for a fact of each kind: the user's words, its own, or a tool's.
_RECALL_IN = {"rule": "prompts", "request": "prompts", "decision": "answers",
              "failed": "answers", "output": "results"}
_MAP_TEXT = "Let me look at a map of the repository's code first."
# The most times the model fetches one need of one step again whole (a re-read, a re-run) in a
# run; from then on the need counts as compacted away (`_compacted_fetches`): searched for, or
# run again narrowed, else lost. No finished `bench recall` run of any client fetched one need
# more than four times; pi's lossy 32k run of docutils-deprecation fetched one 174 times, each
# fetch overflowing the window and each lossy summary dropping it.
MAX_FETCHES_AGAIN = 4


@dataclass(frozen=True, slots=True)
class PlannedCall:
    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedReply:
    """The full answer before any cut-off: thinking, then text, then tool calls."""

    # "scenario:<turn>:<step>", "recovery:<turn>:<step>:<fact>",
    # "violation:<turn>:<step>:<fact>", "explore:<turn>:<step>", "read-on:<turn>:<step>",
    # "fallback:<step>" or "summary"
    source: str
    thinking: str = ""
    text: str = ""
    calls: tuple[PlannedCall, ...] = ()
    knowledge: tuple[FactCheck, ...] = ()
    skipped: tuple[str, ...] = ()  # "<turn>:<step>" of the exploring steps not taken


@dataclass(frozen=True, slots=True)
class CallRef:
    """What an id the simulator made says: the turn (a number or "f"), the step, and the
    need whose detour the call was, if it was one (`saved`: the search of a saved output),
    or whether it asked for the map before the step."""

    turn: str
    step: int
    detour: int | None = None
    explore: bool = False
    saved: bool = False
    recall: bool = False
    open: bool = False  # the read of a recalled entry whole
    more: bool = False  # a read on, after the step's result was cut (reading.py)


def make_call_id(prefix: str, turn: int | str, step: int, index: int, nonce: str,
                 detour: int | None = None, explore: bool = False, saved: bool = False,
                 recall: bool = False, open: bool = False, more: bool = False) -> str:
    saved_tag = "s" if saved else "r" if recall else "o" if open else ""
    tag = (f"{step}d{detour}{saved_tag}" if detour is not None
           else f"{step}m" if explore else f"{step}c" if more else f"{step}")
    return f"{prefix}_sim_{turn}_{tag}_{index}_{nonce}"


def conversation_digest(transcript: Transcript) -> str:
    """Eight hex digits that change whenever the conversation does."""
    return hashlib.sha256(repr(transcript.messages).encode("utf-8")).hexdigest()[:8]


def parse_call_id(call_id: str) -> CallRef | None:
    """What an id the simulator made encodes, or None for any other id."""
    match = _CALL_ID.match(call_id)
    if match is None:
        return None
    detour = match["detour"]
    return CallRef(match["turn"], int(match["step"]), int(detour) if detour else None,
                   match["explore"] is not None, match["saved"] is not None,
                   match["recall"] is not None, match["open"] is not None,
                   match["more"] is not None)


class Refetches:
    """How many times, over one run, each need of each step was fetched again whole: what a
    model would remember of its own attempts, and a request after a compaction whose summary
    dropped them cannot show (the faithful summary's `_REFETCHED` note says it for one step)."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[int, int, int]] = Counter()

    def given_up(self, turn: int, step: int) -> frozenset[int]:
        """The needs of `step` of `turn` fetched again MAX_FETCHES_AGAIN times already."""
        return frozenset(need for (t, s, need), count in self._counts.items()
                         if (t, s) == (turn, step) and count >= MAX_FETCHES_AGAIN)

    def count(self, reply: PlannedReply) -> None:
        """Count the fetches again whole among `reply`'s calls."""
        for call in reply.calls:
            ref = parse_call_id(call.id)
            need = ref.detour if ref is not None and _fetch_again(ref) else None
            if ref is not None and need is not None and ref.turn.isdigit():
                self._counts[int(ref.turn), ref.step, need] += 1

    def clear(self) -> None:
        self._counts.clear()


@dataclass(frozen=True, slots=True)
class _Context:
    """What every step of one request shares."""

    transcript: Transcript
    scenario: Scenario
    id_prefix: str
    nonce: str
    refetches: Refetches | None = None


def plan_reply(transcript: Transcript, scenario: Scenario, *, id_prefix: str,
               summariser: SummaryMode = "faithful", summary_chars: int | None = None,
               refetches: Refetches | None = None) -> PlannedReply:
    """What the model says to `transcript`; `refetches`, when given, counts the run's fetches
    again whole (and bounds them: MAX_FETCHES_AGAIN)."""
    context = _Context(transcript, scenario, id_prefix, conversation_digest(transcript),
                       refetches)
    last = transcript.messages[-1] if transcript.messages else None
    if last is None or last.role != "user":
        return _fallback(context, 2)
    # What was said after the last tool result (all of it when there are none): a new prompt
    # there wins over the results (pi sends the next prompt after an unfinished turn's results,
    # Codex its compaction prompt); text that matches nothing (Claude Code's reminders) does not.
    texts = trailing_texts(last)
    found = scenario.find_turn(texts[-1]) if texts else None
    if found is None and is_summary_request(transcript):
        return PlannedReply(source="summary",
                            text=summarise(transcript, summariser, summary_chars,
                                           progress=_progress(transcript)))
    if found is None and texts:
        # Not inside a summary handed over after a compaction: it quotes earlier prompts.
        found = scenario.find_turn_within(
            "\n".join(text for text in texts if not is_summary_handoff(text))
        )
        if found is not None and _ends_with_handoff(texts):
            return _resumed(context, found)
    if found is not None:
        return _scenario_step(context, found, 0)
    if last.tool_results:
        return _after_results(context, last)
    return _without_prompt(context)


def _ends_with_handoff(texts: list[str]) -> bool:
    """Whether the last thing said (context blocks aside) is a summary handed over: the
    request comes right after a compaction in the middle of a turn (Codex keeps the earlier
    prompts, then its summary)."""
    said = [text for text in texts if not is_context_block(text)]
    return bool(said) and is_summary_handoff(said[-1])


def _resumed(context: _Context, turn: int) -> PlannedReply:
    """A turn taken up again after a compaction in its middle, from the summary: the work the
    summary says was done is not done again. When the summary says which step of this turn
    was done last (a faithful one written from the conversation's messages: `_progress`), the
    model goes on with the next; otherwise to the turn's answer, whose needs (checked as ever)
    fetch again what it no longer has, but for those whose fetch the summary says the
    compaction took away (`_compacted_fetches`: fetched once more, they would overflow the
    window once more). (Redoing the turn from its first step would loop for
    ever when the turn's own outputs are what overflows; going on from the step after the
    last one done cannot: each compaction's summary names a later one.)"""
    steps = context.scenario.turns[turn].steps
    done = _done_in(context, turn)
    following = min(done + 1 if done is not None else len(steps) - 1, len(steps) - 1)
    return _scenario_step(context, turn, following)


def _progress(transcript: Transcript) -> str:
    """Where the work stands, for a summary of `transcript`: the scenario step whose results
    came last (the one before it, when they were a detour or the map asked for before it: the
    step itself was still to come; after a fetch again, the need it fetched, and those an
    earlier summary said were: `_REFETCHED`); for a conversation serialised in the
    instruction, whose calls carry no ids, the last call made (name and arguments, when
    short); "" when there is neither."""
    for message in reversed(transcript.messages):
        for part in reversed(message.parts):
            if not isinstance(part, ToolResultPart):
                continue
            ref = parse_call_id(part.tool_call_id)
            if ref is None or not ref.turn.isdigit():
                continue
            done = ref.step - 1 if ref.detour is not None or ref.explore else ref.step
            notes = [_PROGRESS.format(turn=ref.turn, step=done)] if done >= 0 else []
            if ref.detour is not None:  # and those an earlier summary named stay named
                needs = _refetched(transcript, ref.turn, ref.step)
                needs |= {ref.detour} if _fetch_again(ref) else set()
                if needs:
                    notes.append(_REFETCHED.format(step=ref.step, turn=ref.turn,
                                                   needs=", ".join(map(str, sorted(needs)))))
            return "\n".join(notes)
    calls = serialised_calls(transcript)
    said = json.dumps(list(calls[-1]), sort_keys=True, ensure_ascii=False) if calls else ""
    if not said or len(said) > _LAST_CALL_CHARS:
        return ""
    fetching = said_before_last_call(transcript).startswith(_FETCH_TEXT.split("{", 1)[0])
    return _LAST_CALL.format(call=said) + (f"\n{_FETCHING}" if fetching else "")


def _fetch_again(ref: CallRef) -> bool:
    """Whether a call is a need's fetch done again (a re-read, a re-run), not a search."""
    return ref.detour is not None and not (ref.saved or ref.recall or ref.open)


def _refetched(transcript: Transcript, turn: str, step: int) -> set[int]:
    """The needs of step `step` of `turn` an earlier summary in `transcript` says were
    fetched again and compacted away (`_REFETCHED`)."""
    said = [match for message in transcript.messages for text in message.texts
            for match in _REFETCHED_SAID.finditer(text)]
    if said and (said[-1]["turn"], int(said[-1]["step"])) == (turn, step):
        return {int(need) for need in said[-1]["needs"].split(", ")}
    return set()


def _compacted_fetches(context: _Context, turn: int, index: int) -> frozenset[int]:
    """The needs of step `index` of `turn` whose fetch the latest summary handed over says a
    compaction took away: by their numbers (`_REFETCHED`), or, for a serialised conversation,
    the needs whose fetch is the last call made when that call was a fetch again
    (`_FETCHING`: a step's own call whose output overflowed is fetched whole once, as after
    a compaction of the conversation's messages). None once a prompt came after that summary:
    a new turn starts from what its request holds."""
    handoffs = _handoffs(context.transcript)
    if not handoffs or _asked_since(context.transcript):
        return frozenset()
    needs = {int(need) for match in _REFETCHED_SAID.finditer(handoffs[-1])
             if (int(match["turn"]), int(match["step"])) == (turn, index)
             for need in match["needs"].split(", ")}
    last = _last_call(handoffs[-1]) if _FETCHING in handoffs[-1] else None
    if last is not None:
        step, cwd = context.scenario.turns[turn].steps[index], working_directory(context.transcript)
        needs |= {need for need, fact_id in enumerate(step.needs)
                  if any(_is_call(context, tool, last, cwd)
                         for tool in _detour_tools(context.scenario.facts[fact_id]))}
    return frozenset(needs)


def _handoffs(transcript: Transcript) -> list[str]:
    """The summaries handed over after a compaction that `transcript` holds, in order."""
    return [text for message in transcript.messages if message.role == "user"
            for text in message.texts if is_summary_handoff(text)]


def _asked_since(transcript: Transcript) -> bool:
    """Whether a prompt came after the latest summary handed over (context blocks aside)."""
    asked = False
    for message in transcript.messages:
        for text in message.texts if message.role == "user" else ():
            if is_summary_handoff(text):
                asked = False
            elif not is_context_block(text):
                asked = True
    return asked


def _done_in(context: _Context, turn: int) -> int | None:
    """The step of `turn` the latest summary handed over says was done last, if it says: by
    its number, or by its call (a summary of a serialised conversation names the last call
    made: the latest step of the turn with that call, fitted to the request's tools; or, when
    it was the fetch of what a step needed, the step before that one)."""
    handoffs = _handoffs(context.transcript)
    if not handoffs:
        return None
    found = list(_PROGRESS_SAID.finditer(handoffs[-1]))
    if found:
        return int(found[-1]["step"]) if int(found[-1]["turn"]) == turn else None
    last = _last_call(handoffs[-1])
    if last is None:
        return None
    steps, facts = context.scenario.turns[turn].steps, context.scenario.facts
    cwd = working_directory(context.transcript)
    for index in range(len(steps) - 1, -1, -1):
        if any(_is_call(context, tool, last, cwd) for tool in steps[index].tools):
            return index
    # else the fetch of what a step needed: that step was still to come
    for index in range(len(steps) - 1, -1, -1):
        if any(_is_call(context, tool, last, cwd)
               for need in steps[index].needs for tool in _detour_tools(facts[need])):
            return index - 1
    return None


def _last_call(handoff: str) -> tuple[str, dict[str, str]] | None:
    """The last call a summary says was made (`_LAST_CALL`): its name and arguments."""
    calls = list(_LAST_CALL_SAID.finditer(handoff))
    try:
        name, arguments = json.loads(calls[-1]["call"]) if calls else (None, None)
    except (ValueError, TypeError):
        return None
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    return name, {key: str(value) for key, value in arguments.items()}


def _is_call(context: _Context, tool: ToolInvocation, call: tuple[str, dict[str, str]],
             cwd: str | None) -> bool:
    """Whether a scenario call, fitted to the request's tools, is `call`."""
    fitted = fit_call(tool.name, tool.arguments, context.transcript.tools, cwd)
    return fitted is not None and \
        (fitted[0], {key: str(value) for key, value in fitted[1].items()}) == call


def _without_prompt(context: _Context) -> PlannedReply:
    """A request that ends with no prompt the model knows and no result of its own calls: a
    compaction dropped the latest prompt (and the results the model was waiting for). When
    the summary handed over quotes one of the scenario's prompts, the model takes up the
    latest quoted one (`_resumed`); when nothing tells it what was asked, it gives the
    fallback's answer, recorded as a violation of the latest request."""
    handoffs = "\n".join(_handoffs(context.transcript))
    last = context.transcript.messages[-1]
    asked = [text for text in trailing_texts(last)
             if not is_summary_handoff(text) and not is_context_block(text)]
    if not handoffs or asked:  # no compaction, or a new prompt the scenario does not know
        return _fallback(context, 0)
    quoted = context.scenario.turns_quoted(handoffs)
    if quoted:
        return _resumed(context, max(quoted))
    reply = _fallback(context, 0)
    lost = FactCheck(LATEST_REQUEST, "request", f"{FALLBACK_TURN}:0", "violated")
    return replace(reply, knowledge=(lost,))


def _after_results(context: _Context, last: TranscriptMessage) -> PlannedReply:
    """The step after the one whose calls these results answer (the same step after a
    detour)."""
    for result in last.tool_results:
        ref = parse_call_id(result.tool_call_id)
        if ref is None:
            continue
        if ref.turn == FALLBACK_TURN:
            return _fallback(context, ref.step + 1)
        turn_index = int(ref.turn)
        if turn_index < len(context.scenario.turns):
            steps = context.scenario.turns[turn_index].steps
            again = ref.detour is not None or ref.explore  # the step itself is still to come
            reading = None if again else _read_on(context, turn_index, ref.step)
            if reading is not None:
                return reading
            following = ref.step if again else ref.step + 1
            if following < len(steps):
                return _scenario_step(context, turn_index, following)
        break
    return _fallback(context, 2)


def _read_on(context: _Context, turn: int, index: int) -> PlannedReply | None:
    """The read on of a step whose results were cut before the lines it reads to see
    (reading.py); None when they show them all, when the read on just answered showed none of
    them, or when it has read on `MAX_READS_ON` times."""
    steps = context.scenario.turns[turn].steps
    sees = steps[index].sees if index < len(steps) else ()
    if not sees:
        return None
    shown: list[str] = []
    latest: list[str] = []  # the results of the read on just answered, if one was
    reads = 0
    last = context.transcript.messages[-1]
    for message in context.transcript.messages:
        for part in message.parts:
            call_id = (part.tool_call_id if isinstance(part, ToolResultPart)
                       else part.id if isinstance(part, ToolCallPart) else None)
            ref = parse_call_id(call_id) if call_id is not None else None
            if (ref is None or ref.turn != str(turn) or ref.step != index
                    or ref.detour is not None or ref.explore):
                continue
            if isinstance(part, ToolResultPart):
                shown.append(part.text)
                if ref.more and message is last:
                    latest.append(part.text)
            elif ref.more:
                reads += 1
    wanted = read_on(sees, shown, latest) if reads < MAX_READS_ON else None
    calls = (_fitted(context, (wanted,), turn, index, None, more=True)
             if wanted is not None else ())
    if wanted is None or not calls:
        return None
    return PlannedReply(source=f"read-on:{turn}:{index}",
                        text=_READ_ON_TEXT.format(line=wanted.arguments["offset"]),
                        calls=calls)


def _scenario_step(context: _Context, turn: int, index: int) -> PlannedReply:
    """Step `index` of `turn`, once what it needs is known (or a detour for it), its calls
    fitted to the request's tools (tool_fitting.py). Exploring steps whose finds the request
    shows are skipped first; the map is asked for before one it does not. A step none of
    whose calls fit any declared tool gives way to the turn's last step."""
    steps = context.scenario.turns[turn].steps
    skipped: list[str] = []
    while index < len(steps) - 1 and steps[index].finds:
        if all_shown(context.transcript, steps[index]):
            skipped.append(f"{turn}:{index}")
            index += 1
            continue
        if wants_map(context.transcript, steps[index]):
            explored = _explore(context, turn, index, tuple(skipped))
            if explored is not None:
                return explored
        break
    reply = _step_reply(context, turn, index)
    return replace(reply, skipped=tuple(skipped)) if skipped else reply


def _explore(context: _Context, turn: int, index: int, skipped: tuple[str, ...]
             ) -> PlannedReply | None:
    """The call of the repository map before an exploring step (exploration.py)."""
    step = context.scenario.turns[turn].steps[index]
    wanted = ToolInvocation(MAP_CALL, {"focus": focus(context.transcript, step)})
    cwd = working_directory(context.transcript)
    fitted = fit_call(wanted.name, wanted.arguments, context.transcript.tools, cwd)
    if fitted is None:
        return None
    call_id = make_call_id(context.id_prefix, turn, index, 0, context.nonce, explore=True)
    return PlannedReply(source=f"explore:{turn}:{index}", text=_MAP_TEXT,
                        calls=(PlannedCall(call_id, *fitted),), skipped=skipped)


def _step_reply(context: _Context, turn: int, index: int) -> PlannedReply:
    steps = context.scenario.turns[turn].steps
    step = steps[index]
    compacted: frozenset[int] = frozenset()
    if step.needs:
        compacted = _compacted_fetches(context, turn, index)
        if context.refetches is not None:
            compacted |= context.refetches.given_up(turn, index)
    gate = _gate(context, turn, index, step, compacted)
    if gate.detour is not None:
        return _detour(context, turn, index, step.needs[gate.detour], gate,
                       gate.detour in compacted)
    calls = _fitted(context, step.tools, turn, index, None)
    if step.tools and not calls:
        index = len(steps) - 1
        step = steps[index]
    text = "\n\n".join((*gate.opening, step.text)) if gate.opening else step.text
    if step.text_tokens:
        filler = filler_text(step.text_tokens, seed=turn * 31 + index)
        text = f"{text}\n\n{filler}" if text else filler
    return PlannedReply(source=f"scenario:{turn}:{index}", thinking=step.thinking, text=text,
                        calls=calls, knowledge=gate.checks)


def _gate(context: _Context, turn: int, index: int, step: Step,
          compacted: frozenset[int] = frozenset()) -> Gate:
    if not step.needs:
        return Gate(())
    facts = context.scenario.facts
    refs = [
        ref
        for message in context.transcript.messages
        for call in message.tool_calls
        if (ref := parse_call_id(call.id)) is not None and ref.detour is not None
        and ref.turn == str(turn) and ref.step == index
    ]
    done = frozenset(ref.detour for ref in refs if ref.detour is not None and _fetch_again(ref))
    searched = frozenset(ref.detour for ref in refs if ref.detour is not None and ref.saved)
    recalled = frozenset(ref.detour for ref in refs if ref.detour is not None and ref.recall)
    opened = frozenset(ref.detour for ref in refs if ref.detour is not None and ref.open)
    fits = {
        need: bool(_fitted(context, _detour_tools(facts[fact_id]), turn, index, need))
        for need, fact_id in enumerate(step.needs)
    }

    def can_search_saved(need: int) -> bool:
        return bool(_saved_search(context, facts[step.needs[need]], turn, index, need,
                                  need in compacted))

    can_recall = bool(_recall(context, step.needs[0], turn, index, 0)) if step.needs else False

    def can_open(need: int) -> bool:
        return bool(_open(context, step.needs[need], turn, index, need))

    return check_needs(context.transcript, facts, step.needs, f"{turn}:{index}", done, fits,
                       searched, can_search_saved, recalled, can_recall, opened, can_open,
                       compacted)


def _recall(context: _Context, fact_id: str, turn: int, index: int, need: int
            ) -> tuple[PlannedCall, ...]:
    """The search of the session's history for a fact, by what it is about (never its text:
    the call's own arguments are in the request, and must not make the fact known)."""
    fact = context.scenario.facts[fact_id]
    query = fact.about or fact.id.replace("-", " ")
    if fact.command:  # an output: the command it would otherwise run again
        query = f"{query} {fact.command}"
    arguments = {"query": query}
    where = _RECALL_IN.get(fact.kind)
    offered = next((t for t in context.transcript.tools if t.name == RECALL_CALL), None)
    properties = offered.schema.get("properties") if offered is not None else None
    if where is not None and isinstance(properties, Mapping) and "in" in properties:
        arguments["in"] = where
    return _fitted(context, (ToolInvocation(RECALL_CALL, arguments),), turn, index,
                   need, recall=True)


def _open(context: _Context, fact_id: str, turn: int, index: int, need: int
          ) -> tuple[PlannedCall, ...]:
    """The read of the entry whose excerpt, in the result of this need's recall, shows part
    of the fact (`recalled_entry`), from a few lines above where it does; none when no
    excerpt does, or the client's recall tool reads no entry."""
    recalled = [
        part.text
        for message in context.transcript.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
        and (ref := parse_call_id(part.tool_call_id)) is not None and ref.recall
        and ref.detour == need and ref.turn == str(turn) and ref.step == index
    ]
    offered = next((t for t in context.transcript.tools if t.name == RECALL_CALL), None)
    properties = offered.schema.get("properties") if offered is not None else None
    if not recalled or not isinstance(properties, Mapping) or "entry" not in properties:
        return ()
    found = recalled_entry(recalled[-1], context.scenario.facts[fact_id])
    if found is None:
        return ()
    entry, line = found
    arguments: dict[str, Any] = {"entry": entry}
    if line > _OPEN_BEFORE and "offset" in properties:
        arguments["offset"] = line - _OPEN_BEFORE  # a few lines above what it saw
    return _fitted(context, (ToolInvocation(RECALL_CALL, arguments),), turn, index,
                   need, open=True)


def _saved_search(context: _Context, fact: Fact, turn: int, index: int, need: int,
                  compacted: bool = False) -> tuple[PlannedCall, ...]:
    """The search of the saved output the fact was cut from; for a need whose fetch a
    compaction took away, when no saved output is in reach, its command run again narrowed
    to the lines looked for (`narrowed_run`)."""
    search = saved_output_search(context.transcript, fact, _printed(context.scenario, fact))
    if search is None and compacted:
        search = narrowed_run(fact)
    if search is None:
        return ()
    return _fitted(context, (search,), turn, index, need, saved=True)


def _printed(scenario: Scenario, fact: Fact) -> Callable[[str], bool]:
    """Whether a call (by its id) is a run whose output holds `fact`: the scripted run that
    printed it (`Scenario.printed_by`), or one run again to show it; any run of the command
    when no step is known to have printed it."""
    origin = scenario.printed_by(fact.id)

    def printed(call_id: str) -> bool:
        if origin is None:
            return True
        ref = parse_call_id(call_id)
        if ref is None or not ref.turn.isdigit():
            return False
        if ref.detour is None:
            return (int(ref.turn), ref.step) == origin and not (ref.explore or ref.more)
        steps = scenario.turns[int(ref.turn)].steps if int(ref.turn) < len(scenario.turns) else ()
        needs = steps[ref.step].needs if ref.step < len(steps) else ()
        run_again = not (ref.saved or ref.recall or ref.open)  # not a search of the history
        return run_again and ref.detour < len(needs) and needs[ref.detour] == fact.id

    return printed


def _detour_tools(fact: Fact) -> tuple[ToolInvocation, ...]:
    if fact.kind in FETCHABLE:
        return (fact.fetch,) if fact.fetch is not None else ()
    return fact.otherwise.tools if fact.otherwise is not None else ()


def _detour(context: _Context, turn: int, index: int, fact_id: str, gate: Gate,
            compacted: bool = False) -> PlannedReply:
    """The call(s) that fetch a missing fact again, or act without it (`compacted`: its
    fetch was compacted away before)."""
    fact = context.scenario.facts[fact_id]
    need = gate.detour
    if gate.recall and need is not None:
        return PlannedReply(source=f"recovery:{turn}:{index}:{fact.id}",
                            text=_RECALL_TEXT.format(about=fact.about or f"`{fact.id}`"),
                            calls=_recall(context, fact_id, turn, index, need),
                            knowledge=gate.checks)
    if gate.open and need is not None:
        return PlannedReply(source=f"recovery:{turn}:{index}:{fact.id}",
                            text=_OPEN_TEXT.format(about=fact.about or f"`{fact.id}`"),
                            calls=_open(context, fact_id, turn, index, need),
                            knowledge=gate.checks)
    if gate.saved and need is not None:
        calls = _saved_search(context, fact, turn, index, need, compacted)
    else:
        calls = _fitted(context, _detour_tools(fact), turn, index, need)
    if fact.kind in FETCHABLE:
        about = fact.about or f"`{fact.id}`"
        narrowed = gate.saved and compacted and calls and calls[0].name != "grep"
        said = _NARROW_TEXT if narrowed else _SEARCH_TEXT if gate.saved else _FETCH_TEXT
        return PlannedReply(source=f"recovery:{turn}:{index}:{fact.id}",
                            text=said.format(about=about), calls=calls,
                            knowledge=gate.checks)
    text = fact.otherwise.text if fact.otherwise is not None else ""
    return PlannedReply(source=f"violation:{turn}:{index}:{fact.id}", text=text, calls=calls,
                        knowledge=gate.checks)


def _fitted(context: _Context, tools: tuple[ToolInvocation, ...], turn: int, index: int,
            detour: int | None, saved: bool = False, recall: bool = False, open: bool = False,
            more: bool = False) -> tuple[PlannedCall, ...]:
    if not tools:
        return ()
    cwd = working_directory(context.transcript)
    calls: list[PlannedCall] = []
    for tool in tools:
        fitted = fit_call(tool.name, tool.arguments, context.transcript.tools, cwd)
        if fitted is not None:
            name, arguments = fitted
            call_id = make_call_id(context.id_prefix, turn, index, len(calls), context.nonce,
                                   detour, saved=saved, recall=recall, open=open,
                                   more=more)
            calls.append(PlannedCall(id=call_id, name=name, arguments=arguments))
    return tuple(calls)


# --- the fallback ---------------------------------------------------------------------------


def _fallback(context: _Context, step: int) -> PlannedReply:
    transcript, id_prefix, nonce = context.transcript, context.id_prefix, context.nonce
    tools = set(transcript.tool_names)
    seen = _fallback_results(transcript)
    if step == 0 and "ls" in tools:
        call = PlannedCall(make_call_id(id_prefix, FALLBACK_TURN, 0, 0, nonce), "ls", {"path": "."})
        return PlannedReply(source="fallback:0", text="Let me look at the workspace first.",
                            calls=(call,))
    if step <= 1 and "read" in tools:
        listing = seen.get("ls")
        target = _first_file(listing) if listing is not None else None
        if target is not None:
            call = PlannedCall(
                make_call_id(id_prefix, FALLBACK_TURN, 1, 0, nonce), "read", {"path": target}
            )
            return PlannedReply(source="fallback:1", text=f"Now `{target}`.", calls=(call,))
    return PlannedReply(source="fallback:2", text=_fallback_answer(transcript, seen))


def _fallback_results(transcript: Transcript) -> dict[str, str]:
    """Tool name -> result text, for the fallback calls made since the latest prompt."""
    out: dict[str, str] = {}
    for message in _since_latest_prompt(transcript.messages):
        for result in message.tool_results:
            ref = parse_call_id(result.tool_call_id)
            if ref is None or ref.turn != FALLBACK_TURN:
                continue
            call = transcript.tool_call(result.tool_call_id)
            if call is not None:
                out[call.name] = result.text
    return out


def _since_latest_prompt(messages: tuple[TranscriptMessage, ...]) -> tuple[TranscriptMessage, ...]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not message.tool_results and message.texts:
            return messages[index + 1 :]
    return messages


def _first_file(listing: str) -> str | None:
    fallback: str | None = None
    for line in listing.splitlines():
        words = line.strip().lstrip("-*").split()
        if not words:
            continue
        name = words[-1] if len(words) > 1 and "." in words[-1] else words[0]
        if name.endswith("/") or name in (".", ".."):
            continue
        if "." in name.strip("."):
            return name
        fallback = fallback or name
    return fallback


def _entries(listing: str) -> list[str]:
    return [line.strip() for line in listing.splitlines() if line.strip()]


def _fallback_answer(transcript: Transcript, seen: dict[str, str]) -> str:
    prompt = " ".join(transcript.latest_prompt().split())
    if len(prompt) > _ECHO_LIMIT:
        prompt = prompt[:_ECHO_LIMIT] + "…"
    parts: list[str] = []
    listing = seen.get("ls")
    if listing is not None:
        entries = _entries(listing)
        shown = ", ".join(entries[:8]) + (", …" if len(entries) > 8 else "")
        parts.append(
            f"I had a look at the workspace: `ls .` lists {len(entries)} entries ({shown})."
        )
    content = seen.get("read")
    if content is not None:
        first = next((line.strip() for line in content.splitlines() if line.strip()), "")
        target = _first_file(listing) if listing is not None else None
        name = f"`{target}`" if target else "The file I read"
        parts.append(f"{name} begins with: \"{first[:200]}\".")
    if prompt:
        parts.append(f"You asked: \"{prompt}\".")
    parts.append(
        "This prompt is not part of the simulator's scenario, so this is its generic answer; "
        "nothing else needs doing."
    )
    return " ".join(parts)
