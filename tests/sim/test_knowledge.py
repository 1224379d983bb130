"""The simulated model knows only what its request holds: a fact a step needs is found, fetched
again, or acted on wrongly, by the same rule whatever the client; on plain objects and over
HTTP through the official SDKs."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.sim.knowledge import (
    RequestText,
    check_needs,
    normalise,
    recalled_entry,
    saved_output_search,
)
from agent_server.sim.responder import MAX_FETCHES_AGAIN, Refetches, parse_call_id, plan_reply
from agent_server.sim.scenario import Fact, ScenarioError, ToolInvocation, parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.transcript import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    TranscriptMessage,
)

LINES = ("def parse_header(raw):", "    if not raw.startswith(MAGIC):",
         "        raise HeaderError('bad magic in header')")
RULE = "Never edit the vendored copy under third_party/."
FAILED = "Raising the recursion limit did not help"

SCENARIO: dict[str, Any] = {
    "name": "knowledge",
    "facts": [
        {"id": "header", "kind": "file", "about": "parse_header in src/codec.py",
         "path": "src/codec.py", "lines": [40, 42], "text": list(LINES)},
        {"id": "port", "kind": "output", "text": "listening on port 48213",
         "fetch": {"name": "bash", "arguments": {"command": "tail -n 5 server.log"}}},
        {"id": "no-vendor", "kind": "rule", "text": "Never edit the vendored copy",
         "otherwise": {"text": "I will patch third_party/codec.py directly.",
                       "tools": [{"name": "edit", "arguments": {
                           "path": "third_party/codec.py", "oldText": "a", "newText": "b"}}]}},
        {"id": "recursion", "kind": "failed", "text": FAILED,
         "otherwise": {"text": "Let me raise the recursion limit."}},
    ],
    "turns": [
        {"user": "Read the header parser.", "steps": [
            {"tools": [{"name": "read", "arguments": {"path": "src/codec.py"}}]},
            {"text": "It checks the magic first."},
        ]},
        {"user": "Fix the magic check.", "steps": [
            {"needs": ["header", "no-vendor"],
             "tools": [{"name": "edit", "arguments": {
                 "path": "src/codec.py", "oldText": "MAGIC", "newText": "MAGIC2"}}]},
            {"needs": ["recursion"], "text": "Fixed."},
        ]},
    ],
}
TOOLS = tuple(
    ToolSpec(name, {"type": "object", "properties": properties})
    for name, properties in (
        ("read", {"path": {}, "offset": {}, "limit": {}}),
        ("edit", {"path": {}, "oldText": {}, "newText": {}}),
        ("bash", {"command": {}}),
    )
)


def scenario() -> Any:
    return parse_scenario(SCENARIO, "knowledge")


def numbered(lines: tuple[str, ...], first: int, arrow: bool = False) -> str:
    mark = "→" if arrow else "\t"
    return "\n".join(f"{first + i:6d}{mark}{line}" for i, line in enumerate(lines))


def user(*parts: Any) -> TranscriptMessage:
    return TranscriptMessage("user", tuple(
        TextPart(p) if isinstance(p, str) else p for p in parts))


def assistant(*parts: Any) -> TranscriptMessage:
    return TranscriptMessage("assistant", tuple(
        TextPart(p) if isinstance(p, str) else p for p in parts))


def transcript(*messages: TranscriptMessage, system: str = "") -> Transcript:
    return Transcript(system, TOOLS, messages)


def first_turn(result: str) -> tuple[TranscriptMessage, ...]:
    return (
        user(f"{RULE} Read the header parser."),
        assistant(ToolCallPart("toolu_sim_0_0_0_aaaaaaaa", "read", {"path": "src/codec.py"})),
        user(ToolResultPart("toolu_sim_0_0_0_aaaaaaaa", result)),
        assistant("It checks the magic first."),
    )


# --- plain objects --------------------------------------------------------------------------


def test_text_is_compared_without_tool_prefixes_or_whitespace() -> None:
    plain = "\n".join(LINES)
    for shown in (numbered(LINES, 40), numbered(LINES, 40, arrow=True),
                  "\n".join(f"src/codec.py:{40 + i}:{line}" for i, line in enumerate(LINES)),
                  "\n".join(f"{40 + i}:{line}" for i, line in enumerate(LINES)),
                  plain.replace("raise HeaderError(", "raise HeaderError(\n    ")):
        assert all(normalise(line) in normalise(shown) for line in LINES), shown
    assert normalise("        raise HeaderError('bad magic in header')") not in normalise(
        "raise HeaderError('bad magic')")


def test_every_part_of_the_request_is_searched() -> None:
    fact = scenario().facts["no-vendor"]
    assert RequestText(transcript(user("hi"), system=RULE)).holds(fact)
    assert RequestText(Transcript("", (ToolSpec("x", {}, RULE),), (user("hi"),))).holds(fact)
    call = ToolCallPart("c1", "write", {"path": "NOTES.md", "content": RULE})
    assert RequestText(transcript(user("hi"), assistant(call))).holds(fact)
    assert not RequestText(transcript(user("hi"), assistant("ok"))).holds(fact)


def test_a_fact_is_known_only_when_all_its_texts_are_there() -> None:
    fact = scenario().facts["header"]
    assert RequestText(transcript(user(numbered(LINES, 40)))).holds(fact)
    head_and_tail = numbered(LINES[:1], 40) + "\n[... 1 line truncated ...]\n" + numbered(
        LINES[2:], 42)
    assert not RequestText(transcript(user(head_and_tail))).holds(fact)


def test_the_gate_checks_fetchable_needs_first_and_detours_once() -> None:
    facts = scenario().facts
    empty = transcript(user("Fix the magic check."))
    needs = ("no-vendor", "header")
    gate = check_needs(empty, facts, needs, "1:0", frozenset(), {0: True, 1: True})
    assert gate.detour == 1  # the file is fetched before the rule is broken
    assert [(c.fact, c.outcome) for c in gate.checks] == [("header", "fetch")]
    gate = check_needs(empty, facts, needs, "1:0", frozenset({1}), {0: True, 1: True})
    assert gate.detour == 0
    assert [(c.fact, c.outcome) for c in gate.checks] == [("header", "lost"),
                                                          ("no-vendor", "violated")]
    gate = check_needs(empty, facts, needs, "1:0", frozenset({0, 1}), {0: True, 1: True})
    assert gate.detour is None
    assert [c.outcome for c in gate.checks] == ["lost", "carried"]
    # A violation without calls of its own opens the step's answer.
    gate = check_needs(empty, facts, ("recursion",), "1:1", frozenset(), {0: False})
    assert gate.detour is None and gate.opening == ("Let me raise the recursion limit.",)


def test_a_present_fact_is_found_and_the_step_goes_on() -> None:
    history = first_turn(numbered(LINES, 40))
    reply = plan_reply(transcript(*history, user("Fix the magic check.")), scenario(),
                       id_prefix="toolu")
    assert reply.source == "scenario:1:0"
    assert [(c.fact, c.outcome) for c in reply.knowledge] == [("header", "found"),
                                                              ("no-vendor", "found")]
    assert [call.name for call in reply.calls] == ["edit"]


def test_a_missing_file_is_read_again_then_the_step_goes_on() -> None:
    history = first_turn("(the file was too large to show)")
    asked = transcript(*history, user("Fix the magic check."))
    reply = plan_reply(asked, scenario(), id_prefix="toolu")
    assert reply.source == "recovery:1:0:header"
    assert [(c.fact, c.outcome) for c in reply.knowledge] == [("header", "fetch")]
    (call,) = reply.calls
    assert (call.name, dict(call.arguments)) == ("read", {"path": "src/codec.py", "offset": 40,
                                                          "limit": 3})
    ref = parse_call_id(call.id)
    assert ref is not None and (ref.turn, ref.step, ref.detour) == ("1", 0, 0)
    fetched = transcript(*history, user("Fix the magic check."),
                         assistant(reply.text, ToolCallPart(call.id, call.name, call.arguments)),
                         user(ToolResultPart(call.id, numbered(LINES, 40))))
    again = plan_reply(fetched, scenario(), id_prefix="toolu")
    assert again.source == "scenario:1:0"
    assert [(c.fact, c.outcome) for c in again.knowledge] == [("header", "recovered"),
                                                              ("no-vendor", "found")]


def test_a_missing_rule_is_broken_visibly_then_the_step_goes_on() -> None:
    history = first_turn(numbered(LINES, 40))
    # The rule was in the first prompt; a compaction dropped it.
    without_rule = (user("Read the header parser."), *history[1:])
    reply = plan_reply(transcript(*without_rule, user("Fix the magic check.")), scenario(),
                       id_prefix="toolu")
    assert reply.source == "violation:1:0:no-vendor"
    assert reply.text == "I will patch third_party/codec.py directly."
    assert [c.arguments["path"] for c in reply.calls] == ["third_party/codec.py"]
    call = reply.calls[0]
    after = transcript(*without_rule, user("Fix the magic check."),
                       assistant(reply.text, ToolCallPart(call.id, call.name, call.arguments)),
                       user(ToolResultPart(call.id, "edited")))
    step = plan_reply(after, scenario(), id_prefix="toolu")
    assert step.source == "scenario:1:0"
    assert [c.outcome for c in step.knowledge] == ["found", "carried"]


def test_a_forgotten_failure_is_tried_again() -> None:
    history = first_turn(numbered(LINES, 40))
    edit = ToolCallPart("toolu_sim_1_0_0_bbbbbbbb", "edit", {"path": "src/codec.py"})
    base = (*history, user(RULE + " Fix the magic check."), assistant(edit),
            user(ToolResultPart(edit.id, "edited")))
    forgot = plan_reply(transcript(*base), scenario(), id_prefix="toolu")
    assert forgot.source == "scenario:1:1"
    assert forgot.text.startswith("Let me raise the recursion limit.")
    assert [(c.fact, c.outcome) for c in forgot.knowledge] == [("recursion", "violated")]
    knew = plan_reply(transcript(*base, system=FAILED + ": the same 14 tests fail."),
                      scenario(), id_prefix="toolu")
    assert knew.text == "Fixed."
    assert [c.outcome for c in knew.knowledge] == ["found"]


RECALL = ToolSpec("recall", {"type": "object", "properties": {"query": {}, "entry": {}}})


def test_a_missing_rule_is_looked_up_with_a_recall_tool_before_it_is_broken() -> None:
    """Issue 45: a client that offers a search of the session's own history gets the rule
    looked up, by what it is about (never its text), and the step goes on knowing it."""
    history = first_turn(numbered(LINES, 40))
    without_rule = (user("Read the header parser."), *history[1:])
    asked = Transcript("", (*TOOLS, RECALL), (*without_rule, user("Fix the magic check.")))
    reply = plan_reply(asked, scenario(), id_prefix="toolu")
    assert reply.source == "recovery:1:0:no-vendor"
    (call,) = reply.calls
    assert call.name == "recall" and "vendored" not in call.arguments["query"].lower()
    ref = parse_call_id(call.id)
    assert ref is not None and (ref.detour, ref.recall, ref.saved) == (1, True, False)
    assert [(c.fact, c.outcome) for c in reply.knowledge] == [("header", "found"),
                                                              ("no-vendor", "fetch")]

    def after(result: str) -> Any:
        return plan_reply(Transcript("", asked.tools, (
            *asked.messages, assistant(reply.text, ToolCallPart(call.id, call.name,
                                                                call.arguments)),
            user(ToolResultPart(call.id, result)))), scenario(), id_prefix="toolu")

    found = after(f"--- entry e1: the user's prompt, turn 1 ---\n{RULE}")
    assert found.source == "scenario:1:0"
    assert [c.outcome for c in found.knowledge] == ["found", "recovered"]
    # Recalled once per step: a search that finds nothing leaves the rule broken.
    missed = after("Nothing in this session's history matches.")
    assert missed.source == "violation:1:0:no-vendor"
    assert [c.outcome for c in missed.knowledge] == ["found", "violated"]


def test_a_missing_file_is_read_again_even_with_a_recall_tool() -> None:
    """A read shows the file as it is now; an old read in the history may not be."""
    history = first_turn("nothing useful")
    asked = Transcript("", (*TOOLS, RECALL), (*history, user(RULE + " Fix the magic check.")))
    reply = plan_reply(asked, scenario(), id_prefix="toolu")
    assert reply.source == "recovery:1:0:header"
    assert [c.name for c in reply.calls] == ["read"]


def test_a_fact_no_declared_tool_can_fetch_is_lost() -> None:
    history = first_turn("nothing useful")
    asked = Transcript("", (TOOLS[1],), (*history, user(RULE + " Fix the magic check.")))
    reply = plan_reply(asked, scenario(), id_prefix="toolu")
    assert reply.source == "scenario:1:0"
    assert [(c.fact, c.outcome) for c in reply.knowledge] == [("header", "lost"),
                                                              ("no-vendor", "found")]


PORT = "listening on port 48213"
TAIL = "tail -n 5 server.log"
LOG_SCENARIO: dict[str, Any] = {
    "name": "saved-output",
    "facts": [SCENARIO["facts"][1]],
    "turns": [
        {"user": "Start the server and show me its log.", "steps": [
            {"tools": [{"name": "bash", "arguments": {"command": TAIL}}]},
            {"needs": ["port"], "text": "It listens on 48213."},
        ]},
    ],
}
GREP = ToolSpec("grep", {"type": "object", "properties": {"pattern": {}, "path": {}}})


def ran_the_command(result: str) -> tuple[TranscriptMessage, ...]:
    return (
        user("Start the server and show me its log."),
        assistant(ToolCallPart("toolu_sim_0_0_0_aaaaaaaa", "bash", {"command": TAIL})),
        user(ToolResultPart("toolu_sim_0_0_0_aaaaaaaa", result)),
    )


def answered(history: tuple[TranscriptMessage, ...], reply: Any, result: str
             ) -> tuple[TranscriptMessage, ...]:
    (call,) = reply.calls
    return (*history, assistant(reply.text, ToolCallPart(call.id, call.name, call.arguments)),
            user(ToolResultPart(call.id, result)))


@pytest.mark.parametrize("notice", [
    # agent-server, Claude Code, pi: how each says where the whole output is
    "[Output truncated: showing the last 2 of 9000 lines. Full output saved to "
    "/s/spill/bash-1a2b.txt; read it with the read tool (path ...), or search it with grep.]",
    "Output too large (51.2KB). Full output saved to: /s/spill/bash-1a2b.txt\n\nPreview: ...",
    "[Showing lines 8999-9000 of 9000. Full output: /s/spill/bash-1a2b.txt]",
])
def test_a_cut_output_is_searched_for_in_the_file_the_client_saved(notice: str) -> None:
    story = parse_scenario(LOG_SCENARIO, "saved-output")
    history = ran_the_command(f"shutting down\nbye\n\n{notice}")
    reply = plan_reply(Transcript("", (*TOOLS, GREP), history), story, id_prefix="toolu")
    assert reply.source == "recovery:0:1:port"
    assert [(c.fact, c.outcome) for c in reply.knowledge] == [("port", "fetch")]
    (call,) = reply.calls
    assert (call.name, dict(call.arguments)) == (
        "grep", {"pattern": "listening on po", "path": "/s/spill/bash-1a2b.txt"})
    ref = parse_call_id(call.id)
    assert ref is not None and (ref.step, ref.detour, ref.saved) == (1, 0, True)
    found = answered(history, reply, f"/s/spill/bash-1a2b.txt:3:{PORT}")
    step = plan_reply(Transcript("", (*TOOLS, GREP), found), story, id_prefix="toolu")
    assert step.source == "scenario:0:1"
    assert [(c.fact, c.outcome) for c in step.knowledge] == [("port", "recovered")]


def test_a_saved_output_that_does_not_hold_the_fact_is_run_again_once() -> None:
    story = parse_scenario(LOG_SCENARIO, "saved-output")
    history = ran_the_command("bye\n[Showing lines 9-9 of 9. Full output: /s/bash-1.txt]")
    search = plan_reply(transcript(*history), story, id_prefix="toolu")
    # Without a grep tool the search is the shell's, regular-expression characters escaped.
    assert [c.name for c in search.calls] == ["bash"]
    assert "/s/bash-1.txt" in search.calls[0].arguments["command"]
    searched = answered(history, search, "(no match)")
    rerun = plan_reply(transcript(*searched), story, id_prefix="toolu")
    assert rerun.source == "recovery:0:1:port"
    assert [dict(c.arguments) for c in rerun.calls] == [{"command": TAIL}]
    # The command cut again names a new saved file: searched once per step, so now lost.
    again = answered(searched, rerun, "bye\n[Showing lines 9-9 of 9. Full output: /s/bash-2.txt]")
    step = plan_reply(transcript(*again), story, id_prefix="toolu")
    assert step.source == "scenario:0:1"
    assert [(c.fact, c.outcome) for c in step.knowledge] == [("port", "lost")]


RESTART = "Restart it on the other port and show me the log again."
LOG_TWICE: dict[str, Any] = {**LOG_SCENARIO, "turns": [*LOG_SCENARIO["turns"], {
    "user": RESTART, "steps": [
        {"tools": [{"name": "bash", "arguments": {"command": TAIL}}]},
        {"needs": ["port"], "text": "It listened on 48213 before the restart."},
    ]}]}


def ran_it_again(first: tuple[TranscriptMessage, ...], result: str
                 ) -> tuple[TranscriptMessage, ...]:
    return (*first, user(RESTART),
            assistant(ToolCallPart("toolu_sim_1_0_0_bbbbbbbb", "bash", {"command": TAIL})),
            user(ToolResultPart("toolu_sim_1_0_0_bbbbbbbb", result)))


def test_a_saved_output_is_searched_in_the_run_that_printed_the_fact() -> None:
    """A later run of the command (after a change) printed something else: the model looks
    in the file of the run it saw the fact in, and in no other run's."""
    story = parse_scenario(LOG_TWICE, "saved-output")
    assert story.printed_by("port") == (0, 0)
    first = ran_the_command("bye\n[Showing lines 9-9 of 9. Full output: /s/first.txt]")
    both = ran_it_again(first, "bye\n[Showing lines 9-9 of 9. Full output: /s/second.txt]")
    reply = plan_reply(Transcript("", (*TOOLS, GREP), both), story, id_prefix="toolu")
    assert reply.source == "recovery:1:1:port"
    assert [dict(c.arguments)["path"] for c in reply.calls] == ["/s/first.txt"]
    # The run that printed it compacted away: not searched for in the later run's file, but
    # recalled where the history is searchable, else run again.
    later = ran_it_again((user("Summary: the server was started."),),
                         "bye\n[Showing lines 9-9 of 9. Full output: /s/second.txt]")
    recalled = plan_reply(Transcript("", (*TOOLS, GREP, RECALL), later), story,
                          id_prefix="toolu")
    assert [c.name for c in recalled.calls] == ["recall"]
    rerun = plan_reply(Transcript("", (*TOOLS, GREP), later), story, id_prefix="toolu")
    assert [dict(c.arguments) for c in rerun.calls] == [{"command": TAIL}]


def test_a_missing_output_is_recalled_by_what_it_is_about_and_its_command() -> None:
    """The model knows the command it would run again: it looks the output up by that too
    (a report seldom names what it reports on, nor the script that printed it)."""
    story = parse_scenario(LOG_SCENARIO, "saved-output")
    history = ran_the_command("bye")  # the line needed was in an earlier run, compacted away
    reply = plan_reply(Transcript("", (*TOOLS, RECALL), history), story, id_prefix="toolu")
    assert reply.source == "recovery:0:1:port"
    (call,) = reply.calls
    query = call.arguments["query"]
    assert call.name == "recall" and query.endswith(f" {TAIL}")
    assert PORT not in query and "48213" not in query


def test_an_output_cut_without_a_saved_file_is_run_again() -> None:
    story = parse_scenario(LOG_SCENARIO, "saved-output")
    history = ran_the_command("bye\n[... 8998 lines omitted ...]")
    reply = plan_reply(Transcript("", (*TOOLS, GREP), history), story, id_prefix="toolu")
    assert [(c.name, dict(c.arguments)) for c in reply.calls] == [("bash", {"command": TAIL})]
    ref = parse_call_id(reply.calls[0].id)
    assert ref is not None and (ref.detour, ref.saved) == (0, False)


def test_a_saved_search_looks_for_the_start_of_each_line_escaped() -> None:
    texts = ["TypeError: unsupported operand type(s) for %: 'x'", "[(0,), (None,)] a.b*"]
    fact = parse_scenario({**LOG_SCENARIO, "facts": [{**SCENARIO["facts"][1], "text": texts}]},
                          "x").facts["port"]
    history = ran_the_command("[Full output: /s/b.txt]")
    search = saved_output_search(transcript(*history), fact)
    assert search is not None and search.arguments["path"] == "/s/b.txt"
    pattern = search.arguments["pattern"]
    assert all(re.search(pattern, line) for line in (
        "E   TypeError: unsupported operand type(s) for %: 'x'", "got [(0,), (None,)] a.b*!"))
    assert not re.search(pattern, "TypeError: unsupported operand")
    # The search itself does not make the fact known: only what it finds does.
    asked = transcript(*history, assistant(ToolCallPart("toolu_x", "grep", search.arguments)))
    assert not RequestText(asked).holds(fact)


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "mood"}, "kind"),
    ({"text": []}, "text"),
    ({"lines": [5, 2]}, "lines"),
    ({"otherwise": {"text": "x"}}, "otherwise"),
])
def test_bad_facts_are_refused_with_the_field(change: dict[str, Any], message: str) -> None:
    fact = {**SCENARIO["facts"][0], **change}
    with pytest.raises(ScenarioError, match=message):
        parse_scenario({**SCENARIO, "facts": [fact, *SCENARIO["facts"][1:]]})
    with pytest.raises(ScenarioError, match="no fact nowhere"):
        parse_scenario({**SCENARIO, "turns": [
            {"user": "x", "steps": [{"needs": ["nowhere"], "text": "y"}]}]})


# --- over HTTP ------------------------------------------------------------------------------

ANTHROPIC_TOOLS = [
    {"name": "read", "description": "Read a file.", "input_schema": {
        "type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer"},
                                         "limit": {"type": "integer"}}, "required": ["path"]}},
    {"name": "edit", "description": "Edit a file.", "input_schema": {
        "type": "object", "properties": {"path": {"type": "string"}, "oldText": {"type": "string"},
                                         "newText": {"type": "string"}}}},
]


@pytest.fixture
async def knowing() -> AsyncIterator[tuple[Simulator, AsyncAnthropic, AsyncOpenAI]]:
    simulator = Simulator(scenario=scenario())
    async with SimServer(simulator) as server:
        anthropic = AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        openai = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        yield simulator, anthropic, openai
        await anthropic.close()
        await openai.close()


def as_anthropic(result: str, rule: bool) -> list[dict[str, Any]]:
    prompt = f"{RULE} Read the header parser." if rule else "Read the header parser."
    return [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_sim_0_0_0_aaaaaaaa",
                                           "name": "read", "input": {"path": "src/codec.py"}}]},
        {"role": "user", "content": [{"type": "tool_result",
                                      "tool_use_id": "toolu_sim_0_0_0_aaaaaaaa",
                                      "content": result}]},
        {"role": "assistant", "content": "It checks the magic first."},
        {"role": "user", "content": "Fix the magic check."},
    ]


async def test_over_http_found_recovered_and_violated(
    knowing: tuple[Simulator, AsyncAnthropic, AsyncOpenAI],
) -> None:
    simulator, anthropic, _ = knowing
    found = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=as_anthropic("\n".join(LINES), rule=True))  # type: ignore[arg-type]
    assert [b.name for b in found.content if b.type == "tool_use"] == ["edit"]

    messages = as_anthropic("(cut)", rule=True)
    fetch = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=messages)  # type: ignore[arg-type]
    (call,) = [b for b in fetch.content if b.type == "tool_use"]
    assert call.input == {"path": "src/codec.py", "offset": 40, "limit": 3}
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in fetch.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                      "content": numbered(LINES, 40, arrow=True)}]},
    ]
    step = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=messages)  # type: ignore[arg-type]
    assert [b.name for b in step.content if b.type == "tool_use"] == ["edit"]

    broken = await anthropic.messages.create(
        model="sim-large", max_tokens=1000, tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=as_anthropic("\n".join(LINES), rule=False))  # type: ignore[arg-type]
    (edit,) = [b for b in broken.content if b.type == "tool_use"]
    assert edit.input["path"] == "third_party/codec.py"  # type: ignore[index]

    records = [r.to_json() for r in simulator.records]
    assert [r["source"] for r in records] == [
        "scenario:1:0", "recovery:1:0:header", "scenario:1:0", "violation:1:0:no-vendor"]
    assert [[(k["fact"], k["outcome"]) for k in r["knowledge"]] for r in records] == [
        [("header", "found"), ("no-vendor", "found")],
        [("header", "fetch")],
        [("header", "recovered"), ("no-vendor", "found")],
        [("header", "found"), ("no-vendor", "violated")],
    ]


async def test_over_the_responses_api_the_fetch_is_the_clients_shell(
    knowing: tuple[Simulator, AsyncAnthropic, AsyncOpenAI],
) -> None:
    simulator, _, openai = knowing
    shell = [{"type": "function", "name": "exec_command", "description": "Run a command.",
              "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                             "required": ["cmd"]}, "strict": False}]
    response = await openai.responses.create(
        model="sim-large", tools=shell,  # type: ignore[arg-type]
        input=[
            {"role": "user", "content": f"{RULE} Read the header parser."},
            {"type": "function_call", "call_id": "call_sim_0_0_0_aaaaaaaa",
             "name": "exec_command", "arguments": '{"cmd": "cat -n src/codec.py"}'},
            {"type": "function_call_output", "call_id": "call_sim_0_0_0_aaaaaaaa",
             "output": "Warning: truncated output"},
            {"role": "user", "content": "Fix the magic check."},
        ])
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert "cat -n src/codec.py | sed -n '40,42p'" in call.arguments
    assert simulator.records[-1].source == "recovery:1:0:header"


async def test_the_simulator_counts_a_runs_fetches_again_across_its_requests(
    knowing: tuple[Simulator, AsyncAnthropic, AsyncOpenAI],
) -> None:
    simulator, anthropic, _ = knowing
    for _ in range(MAX_FETCHES_AGAIN + 1):  # the same request: each re-read was taken away
        await anthropic.messages.create(
            model="sim-large", max_tokens=1000, tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
            messages=as_anthropic("(cut)", rule=True))  # type: ignore[arg-type]
    records = [r.to_json() for r in simulator.records]
    assert [r["source"] for r in records] == (
        ["recovery:1:0:header"] * MAX_FETCHES_AGAIN + ["scenario:1:0"])
    assert [(k["fact"], k["outcome"]) for k in records[-1]["knowledge"]] == [
        ("header", "lost"), ("no-vendor", "found")]


def test_a_need_fetched_again_and_lost_each_time_is_fetched_narrowed_after_the_limit() -> None:
    # Each request is the same: every fetch was compacted away by a summary that did not say
    # so (pi's lossy 32k run of docutils-deprecation fetched the same output 174 times).
    story = parse_scenario(LOG_SCENARIO, "saved-output")
    history = ran_the_command("bye\n[... 8998 lines omitted ...]")
    refetches = Refetches()
    whole = []
    for _ in range(MAX_FETCHES_AGAIN + 2):
        reply = plan_reply(Transcript("", (*TOOLS, GREP), history), story, id_prefix="toolu",
                           refetches=refetches)
        refetches.count(reply)
        whole.append([dict(c.arguments) for c in reply.calls] == [{"command": TAIL}])
    assert whole == [True] * MAX_FETCHES_AGAIN + [False, False]
    narrowed = reply.calls[0].arguments["command"]
    assert narrowed.startswith(f"{TAIL} 2>&1 | grep -E ") and PORT not in narrowed
    # Another step's need, or the same need without the count, is fetched whole as before.
    fresh = plan_reply(Transcript("", (*TOOLS, GREP), history), story, id_prefix="toolu")
    assert [dict(c.arguments) for c in fresh.calls] == [{"command": TAIL}]
    assert refetches.given_up(0, 1) == {0} and refetches.given_up(0, 0) == frozenset()
    # What the narrowed run shows is recovered; when it shows nothing, the need is lost.
    found = answered(history, reply, PORT)
    step = plan_reply(Transcript("", (*TOOLS, GREP), found), story, id_prefix="toolu",
                      refetches=refetches)
    assert [(c.fact, c.outcome) for c in step.knowledge] == [("port", "recovered")]
    empty = answered(history, reply, "")
    step = plan_reply(Transcript("", (*TOOLS, GREP), empty), story, id_prefix="toolu",
                      refetches=refetches)
    assert step.source == "scenario:0:1"
    assert [(c.fact, c.outcome) for c in step.knowledge] == [("port", "lost")]


def test_a_request_that_lost_its_prompt_goes_on_from_the_summary_or_answers_blind() -> None:
    handoff = ("The conversation history before this point was compacted into the following "
               "summary:\n\n<summary>\n## Goal\nRead the header parser.\n\n### In progress\n"
               "- {}\n</summary>")
    lossy = ("The conversation history before this point was compacted into the following "
             "summary:\n\n<summary>\n## Goal\nWork on the codec.\n\n## Files read\n"
             "- `src/codec.py`\n</summary>")
    quoted = plan_reply(transcript(user(handoff.format('"Fix the magic check."'))), scenario(),
                        id_prefix="toolu")
    # The turn's answer, and what it needs: here what failed, which the summary did not keep.
    assert quoted.source == "scenario:1:1"
    assert quoted.text.startswith("Let me raise the recursion limit.")
    assert [(c.fact, c.outcome) for c in quoted.knowledge] == [("recursion", "violated")]
    blind = plan_reply(transcript(user(lossy)), scenario(), id_prefix="toolu")
    assert blind.source.startswith("fallback")
    assert [(c.fact, c.kind, c.outcome) for c in blind.knowledge] == [
        ("latest-request", "request", "violated")]
    # Without any summary handed over, an unknown prompt is just the fallback.
    plain = plan_reply(transcript(user("Tell me a joke.")), scenario(), id_prefix="toolu")
    assert plain.source.startswith("fallback") and plain.knowledge == ()


def test_a_turn_compacted_in_its_middle_goes_on_to_its_answer() -> None:
    # Codex after compacting mid-turn: the earlier prompts, then its summary, no results.
    handoff = ("Another language model started to solve this problem and produced a summary "
               "of its thinking process:\n## Goal\nFix the magic check.")
    message = user("Read the header parser.", "Fix the magic check.", handoff)
    reply = plan_reply(transcript(message, system=FAILED), scenario(), id_prefix="call")
    assert reply.source == "scenario:1:1" and reply.text == "Fixed."
    # A new prompt after the summary starts its turn as ever.
    fresh = plan_reply(transcript(user(handoff, "Fix the magic check.")), scenario(),
                       id_prefix="call")
    assert fresh.source.startswith(("scenario:1:0", "recovery:1:0"))


def test_a_recalled_excerpt_that_shows_part_of_an_output_gets_its_entry_read_whole() -> None:
    """Issue 45: a recall excerpt is cut; a model that sees part of what it looks for there
    reads that entry whole (one more call), and only then, if it is still missing, fetches
    the output again. A line the fact shares with a later output is no sign of it: two of
    its lines in a row are."""
    fact = Fact("toc", "output", ('<li><a href="#changed">Changed</a><ul>\n'
                                  '<li><a href="#fixed">Fixed</a></li>',
                                  "FAILED (failures=4, skipped=1)"),
                "the table of contents", ToolInvocation("bash", {"command": "toc"}))
    later = ('--- entry aa: bash result (toc), turn 9 ---\n<li><a href="#changed">Changed</a>'
             '<ul>\n<li><a href="#abbr">Abbr</a></li>...')
    earlier = ('--- entry bb: bash result (toc), turn 2 ---\n<li><a href="#changed">Changed'
               '</a><ul>\n<li><a href="#fixed">Fixed</a></li>\n...')
    assert recalled_entry(f"5 entries:\n{later}\n{earlier}", fact) == ("bb", 1)
    assert recalled_entry(f"5 entries:\n{later}", fact) is None
    # Where it shows: the lines an excerpt says it shows, or a line's own number.
    cut = ("--- entry cc: bash result, turn 3 ---\n[lines 40-41]\nRan 9 tests\n"
           '<li><a href="#changed">Changed</a><ul>\n201: FAILED (failures=4, skipped=1)\n'
           "[lines 300-301]\nx\ny")
    assert recalled_entry(cut, fact) == ("cc", 201)
    assert recalled_entry(cut.replace("201: FAILED (failures=4, skipped=1)\n", "")
                          + '\n<li><a href="#fixed">Fixed</a></li>', fact) is None
    stretch = ("--- entry dd: bash result, turn 3 ---\n[lines 40-42]\nRan 9 tests\n"
               '<li><a href="#changed">Changed</a><ul>\n<li><a href="#fixed">Fixed</a></li>')
    assert recalled_entry(stretch, fact) == ("dd", 41)
    facts = {"toc": fact}
    empty = transcript(user("Write the notes."))
    gate = check_needs(empty, facts, ("toc",), "4:0", frozenset(), {0: True},
                       recalls_done=frozenset({0}), can_recall=True,
                       can_open=lambda need: True)
    assert (gate.detour, gate.open) == (0, True)
    gate = check_needs(empty, facts, ("toc",), "4:0", frozenset(), {0: True},
                       recalls_done=frozenset({0}), can_recall=True,
                       opens_done=frozenset({0}), can_open=lambda need: True)
    assert (gate.detour, gate.open, gate.recall) == (0, False, False)  # run it again
    assert [c.outcome for c in gate.checks] == ["fetch"]
