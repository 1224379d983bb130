"""Reading on: a step that reads a stretch of a file to see all of it reads on from where a
cut result stops, whatever the client's cut (an end cut, a head and a tail), until it has
seen every line; a result that holds the stretch costs nothing more."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.output import OutputLimits
from agent_server.agent.tools.read import ReadTool
from agent_server.sim.reading import MAX_READS_ON, read_on
from agent_server.sim.responder import PlannedReply, parse_call_id, plan_reply
from agent_server.sim.scenario import Location, ScenarioError, parse_scenario
from agent_server.sim.transcript import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    TranscriptMessage,
)
from benchmarks.real_code.script import Script

LOG = "logs/night.log"
LINES = [f"2026-03-0{1 + i // 100} 02:{i % 60:02d}:{i % 7:02d} INFO extract batch={1000 + i} "
         f"rows={(i * 37) % 900 + 100} took={(i * 13) % 40 / 10:.1f}s" for i in range(300)]
PROMPT = "Read the log from the start and say how the night went."
READ = ToolSpec("read", {"type": "object", "properties": {"path": {}, "offset": {},
                                                         "limit": {}}})
SHELL = ToolSpec("exec_command", {"type": "object", "properties": {"cmd": {}},
                                  "required": ["cmd"]})


def sees(first: int, last: int) -> list[Location]:
    return [Location(LOG, LINES[n - 1], n) for n in range(first, last + 1)]


def scenario() -> Any:
    page = {"tools": [{"name": "read", "arguments": {"path": LOG, "offset": 1, "limit": 300}}],
            "sees": [{"path": LOG, "text": place.text, "line": place.line}
                     for place in sees(1, 300)]}
    return parse_scenario({"name": "reading", "turns": [
        {"user": PROMPT, "steps": [page, {"text": "A quiet night."}]}]})


def numbered(first: int, last: int) -> str:
    return "\n".join(f"{n:6}\t{LINES[n - 1]}" for n in range(first, last + 1))


def message(role: str, *parts: Any) -> TranscriptMessage:
    return TranscriptMessage(role, tuple(TextPart(p) if isinstance(p, str) else p
                                         for p in parts))


def answered(history: tuple[TranscriptMessage, ...], reply: PlannedReply, text: str
             ) -> tuple[TranscriptMessage, ...]:
    (call,) = reply.calls
    return (*history, message("assistant", reply.text, ToolCallPart(call.id, call.name,
                                                                    dict(call.arguments))),
            message("user", ToolResultPart(call.id, text)))


# --- which lines to read on -----------------------------------------------------------------


def test_a_result_that_shows_every_line_needs_no_reading_on() -> None:
    assert read_on(tuple(sees(1, 300)), [numbered(1, 300)]) is None
    assert read_on(tuple(sees(1, 300)), [numbered(1, 120), numbered(121, 300)]) is None


def test_an_end_cut_is_read_on_from_the_line_after_the_last_one_seen() -> None:
    wanted = read_on(tuple(sees(1, 300)),
                     [numbered(1, 140) + "\n\n[Showing lines 1-140 of 300. Continue with "
                                         "offset=141.]"])
    assert wanted is not None and wanted.name == "read"
    assert dict(wanted.arguments) == {"path": LOG, "offset": 141, "limit": 160}


def test_a_head_and_tail_cut_is_read_on_in_the_middle_it_left_out() -> None:
    cut = f"{numbered(1, 50)}\n…31204 tokens truncated…\n{numbered(251, 300)}"
    wanted = read_on(tuple(sees(1, 300)), [cut])
    assert wanted is not None
    assert dict(wanted.arguments) == {"path": LOG, "offset": 51, "limit": 200}


def test_a_line_cut_in_its_middle_is_not_seen() -> None:
    half = LINES[99][: len(LINES[99]) // 2]
    wanted = read_on(tuple(sees(1, 300)), [numbered(1, 99) + f"\n{100:6}\t{half}"])
    assert wanted is not None and wanted.arguments["offset"] == 100


# --- the model reads on, through the product's own read tool ---------------------------------


@pytest.mark.parametrize("bound", [4 * 1024, 9 * 1024, 50 * 1024])
async def test_the_model_reads_on_through_agent_servers_read_until_it_saw_every_line(
    tmp_path: Path, bound: int
) -> None:
    """agent-server's read cut at `bound` bytes says where to continue; the simulated model
    reads on from there, one call at a time, and then takes the turn's next step: as many
    reads as the bound makes the page need, and every line seen."""
    (tmp_path / "logs").mkdir()
    (tmp_path / LOG).write_text("\n".join(LINES) + "\n", encoding="utf-8")
    ctx = ToolContext(workspace=tmp_path, spill_dir=tmp_path / "spill",
                      limits=OutputLimits(max_bytes=bound))
    plan = scenario()
    history: tuple[TranscriptMessage, ...] = (message("user", PROMPT),)
    reply = plan_reply(Transcript("", (READ,), history), plan, id_prefix="toolu")
    reads, shown = 0, ""
    while reply.calls:
        assert reply.source == ("scenario:0:0" if reads == 0 else "read-on:0:0")
        (call,) = reply.calls
        result = (await run_tool(ReadTool(), call.arguments, ctx)).text
        shown += result
        reads += 1
        history = answered(history, reply, result)
        reply = plan_reply(Transcript("", (READ,), history), plan, id_prefix="toolu")
    assert reply.source == "scenario:0:1"
    assert all(line in shown for line in LINES)
    size = len("\n".join(LINES).encode())
    assert reads > 1 if size > bound else reads == 1
    assert reads < 2 * size // bound + 3  # each read moves on by about a bound's worth


def test_codexs_shell_reads_on_with_the_lines_it_left_out() -> None:
    """A client with only a shell reads on with `sed -n` of the lines it did not see."""
    plan = scenario()
    history: tuple[TranscriptMessage, ...] = (message("user", PROMPT),)
    first = plan_reply(Transcript("<cwd>/work</cwd>", (SHELL,), history), plan, id_prefix="call")
    cut = f"{numbered(1, 50)}\n…31204 tokens truncated…\n{numbered(251, 300)}"
    history = answered(history, first, cut)
    reply = plan_reply(Transcript("<cwd>/work</cwd>", (SHELL,), history), plan, id_prefix="call")
    assert reply.source == "read-on:0:0"
    (call,) = reply.calls
    assert call.name == "exec_command" and "sed -n '51,250p'" in call.arguments["cmd"]
    ref = parse_call_id(call.id)
    assert ref is not None and ref.more and ref.detour is None and ref.step == 0


def test_a_read_on_that_shows_nothing_new_ends_the_reading_on() -> None:
    """A tool that fails (pi's after a compaction in `-p`: "This extension ctx is stale")
    gets one read on, not a loop of them."""
    plan = scenario()
    history: tuple[TranscriptMessage, ...] = (message("user", PROMPT),)
    reply = plan_reply(Transcript("", (READ,), history), plan, id_prefix="toolu")
    for _ in range(2):
        history = answered(history, reply, "This extension ctx is stale after session "
                                           "replacement or reload.")
        reply = plan_reply(Transcript("", (READ,), history), plan, id_prefix="toolu")
    assert reply.source == "scenario:0:1"
    calls = [part for m in history for part in m.parts if isinstance(part, ToolCallPart)]
    assert len(calls) == 2  # the step's read and one read on


def test_reading_on_stops_after_its_bound_however_little_each_read_shows() -> None:
    plan = scenario()
    history: tuple[TranscriptMessage, ...] = (message("user", PROMPT),)
    reply = plan_reply(Transcript("", (READ,), history), plan, id_prefix="toolu")
    line = 0
    while reply.calls:
        line += 1  # a bound that lets one line through at a time
        history = answered(history, reply, numbered(line, line))
        reply = plan_reply(Transcript("", (READ,), history), plan, id_prefix="toolu")
    assert reply.source == "scenario:0:1"
    assert line == MAX_READS_ON + 1  # the step's read and its reads on


# --- the scenario and the script ------------------------------------------------------------


@pytest.mark.parametrize(("sees_given", "message_part"), [
    ({"path": LOG, "text": "x" * 20}, "expected the line's text and number"),
    ("all of it", "expected a list"),
])
def test_bad_sees_are_refused_with_the_field(sees_given: Any, message_part: str) -> None:
    step = {"tools": [{"name": "read", "arguments": {"path": LOG}}],
            "sees": sees_given if isinstance(sees_given, str) else [sees_given]}
    with pytest.raises(ScenarioError, match=message_part):
        parse_scenario({"turns": [{"user": "u", "steps": [step, {"text": "done"}]}]})


def test_a_step_without_calls_sees_nothing() -> None:
    step = {"text": "done", "sees": [{"path": LOG, "text": LINES[0], "line": 1}]}
    with pytest.raises(ScenarioError, match="only a step that calls tools"):
        parse_scenario({"turns": [{"user": "u", "steps": [step]}]})


def test_a_scripted_page_sees_its_distinguishing_lines(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    repeated = "2026-03-01 02:00:00 INFO heartbeat ok"
    text = "\n".join([LINES[0], repeated, "short", LINES[1], repeated, LINES[2]]) + "\n"
    (tmp_path / LOG).write_text(text, encoding="utf-8")
    step = Script("s", tmp_path).page(LOG, 1, 5)
    assert step["tools"] == [{"name": "read",
                              "arguments": {"path": LOG, "offset": 1, "limit": 5}}]
    # a line found twice, or too short to tell, is no sign of what was read
    assert [(s["line"], s["text"]) for s in step["sees"]] == [(1, LINES[0]), (4, LINES[1])]


def test_the_rehearsal_finds_a_line_that_is_not_where_the_step_says(tmp_path: Path) -> None:
    from benchmarks.real_code.rehearse import Rehearsal, _check_seen

    (tmp_path / "logs").mkdir()
    (tmp_path / LOG).write_text("\n".join(LINES) + "\n", encoding="utf-8")
    right = tuple(sees(10, 12))
    found = Rehearsal()
    _check_seen(right, "turn 0 step 0", tmp_path, found)
    assert found.problems == []
    moved = (*right[:2], Location(LOG, LINES[11], 13))  # one line off, as after an edit
    _check_seen(moved, "turn 0 step 0", tmp_path, found)
    assert len(found.problems) == 1 and "on line 13" in found.problems[0]
