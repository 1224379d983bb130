"""Summary requests, recognised from their words for every client, get a deterministic extractive
summary that folds the previous one in (faithful), or a short goal and the file lists (lossy)."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.context.summary_prompt import (
    build_summary_instruction,
    build_summary_prompt,
    build_turn_prefix_prompt,
    summary_message_text,
)
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session.entries import Carried, Failure
from agent_server.sim.responder import plan_reply
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.summary import LOSSY_GOAL_CHARS, MAX_SUMMARY_TOKENS, SummaryMode, summarise
from agent_server.sim.summary_requests import (
    asks_for_turn_prefix,
    handoff_body,
    is_summary_handoff,
    is_summary_request,
)
from agent_server.sim.tokenizer import count_tokens
from agent_server.sim.transcript import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    TranscriptMessage,
)

SECTIONS = (
    "## Goal",
    "## Constraints and preferences",
    "## Progress",
    "### Done",
    "### In progress",
    "### Blocked",
    "## Key decisions",
    "## Files read",
    "## Files modified",
    "## Next steps",
    "## Critical context",
)

PREVIOUS = """## Goal
"Port the billing module to the new API."

## Constraints and preferences
- "Never touch the database schema."

## Progress
### Done
- Answered: "Port the billing module to the new API."
### In progress
- "Port the billing module to the new API."
### Blocked
- Nothing

## Key decisions
- Keep the old client behind a flag.

## Files read
- `billing/client.py`

## Files modified
- `billing/api.py`

## Next steps
- Run the tests.

## Critical context
- User said: "Port the billing module to the new API.\""""


def assert_sections(text: str) -> None:
    positions = [text.index(heading) for heading in SECTIONS]
    assert positions == sorted(positions)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def result(call_id: str, text: str, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}


async def test_the_cache_sharing_request_is_summarised_with_the_previous_summary(
    anthropic_client: AsyncAnthropic,
) -> None:
    instruction = build_summary_instruction(kept_messages=0, previous_summary_in_context=True)
    messages = [
        {"role": "user", "content": [
            {"type": "text", "text": summary_message_text(PREVIOUS)},
            {"type": "text", "text": "Now fix the failing invoice test. Do not add dependencies."},
        ]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "I will read the test first. Then the module."},
            call("t1", "read", path="tests/test_invoice.py"),
            call("t2", "grep", pattern="total", path="billing"),
        ]},
        {"role": "user", "content": [result("t1", "def test_total(): ..."),
                                     result("t2", "billing/invoice.py:3: total")]},
        {"role": "assistant", "content": [
            call("t3", "edit", path="billing/invoice.py", oldText="a", newText="b"),
            call("t4", "bash", command="pytest -q tests/test_invoice.py"),
            call("t5", "read", path="missing.py"),
        ]},
        {"role": "user", "content": [
            result("t3", "ok"), result("t4", "1 passed"),
            result("t5", "ENOENT: no such file missing.py", error=True),
            {"type": "text", "text": instruction},
        ]},
    ]
    message = await anthropic_client.messages.create(
        model="sim-small", max_tokens=4000, messages=messages
    )
    summary = message.content[0].text
    assert message.stop_reason == "end_turn"
    assert_sections(summary)
    assert '"Port the billing module to the new API."' in summary.split("##")[1]  # goal kept
    assert "Never touch the database schema." in summary
    assert "Do not add dependencies." in summary
    files_read = summary.split("## Files read")[1].split("##")[0]
    files_modified = summary.split("## Files modified")[1].split("##")[0]
    assert "`billing/client.py`" in files_read
    assert "`tests/test_invoice.py`" in files_read
    assert "`billing`" in files_read
    assert "missing.py" not in files_read  # its read failed
    assert "`billing/api.py`" in files_modified
    assert "`billing/invoice.py`" in files_modified
    assert "ENOENT" in summary.split("### Blocked")[1].split("##")[0]
    assert "pytest -q tests/test_invoice.py" in summary
    assert "Now fix the failing invoice test." in summary.split("### In progress")[1]


async def test_the_fresh_prompt_is_summarised_with_the_previous_summary(
    openai_client: AsyncOpenAI,
) -> None:
    conversation = [
        UserMessage.of_text("Add a CSV export to the report page. Keep the old endpoint."),
        AssistantMessage(
            content=(TextContent("Looking at the report view."),
                     ToolCall("c1", "read", {"path": "web/report.py"})),
            stop_reason="toolUse",
        ),
        ToolResultMessage("c1", "read", (TextContent("def report(): ..."),)),
        AssistantMessage(
            content=(ToolCall("c2", "write", {"path": "web/export.py", "content": "x"}),),
            stop_reason="toolUse",
        ),
        ToolResultMessage("c2", "write", (TextContent("written"),)),
    ]
    prompt = build_summary_prompt(conversation, previous_summary=PREVIOUS)
    completion = await openai_client.chat.completions.create(
        model="sim-small", messages=[{"role": "user", "content": prompt}]
    )
    summary = completion.choices[0].message.content or ""
    assert_sections(summary)
    assert "Port the billing module" in summary.split("## Constraints")[0]
    assert "Keep the old endpoint." in summary
    assert "`web/report.py`" in summary.split("## Files read")[1].split("##")[0]
    modified = summary.split("## Files modified")[1].split("##")[0]
    assert "`web/export.py`" in modified
    assert "`billing/api.py`" in modified
    assert "Keep the old client behind a flag." in summary


async def test_the_summary_stays_bounded_however_long_the_conversation(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages: list[dict[str, Any]] = []
    for index in range(120):
        messages.append({"role": "user", "content": f"Request {index}: " + "please " * 60})
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Working on request {index}. " + "detail " * 40},
            *[call(f"c{index}_{j}", "read", path=f"pkg/module_{index}_{j}.py")
              for j in range(5)],
        ]})
        messages.append({"role": "user", "content": [
            result(f"c{index}_{j}", "x = 1\n" * 50) for j in range(5)
        ]})
        messages.append({"role": "assistant", "content": "Done."})
    messages.append({"role": "user", "content": build_summary_instruction(
        kept_messages=0, previous_summary_in_context=False)})
    message = await anthropic_client.messages.create(
        model="sim-large", max_tokens=4000, messages=messages
    )
    summary = message.content[0].text
    assert_sections(summary)
    assert 100 < count_tokens(summary) <= MAX_SUMMARY_TOKENS
    assert message.usage.input_tokens > 30 * count_tokens(summary)
    assert "Request 119" in summary  # the latest request is in progress
    assert "Request 0" in summary.split("## Constraints")[0]  # the first is the goal


# --- recognising a summary request: by its words, the same way for every client -------------

# The clients' own wording (pi 0.73: core/compaction/compaction.js; Claude Code 2.1: the request
# it sends; Codex 0.171: codex-rs/core/templates/compact/prompt.md; agent-server: the product's
# own builders).
PI_INITIAL = ("The messages above are a conversation to summarize. Create a structured context "
              "checkpoint summary that another LLM will use to continue the work.")
PI_UPDATE = ("The messages above are NEW conversation messages to incorporate into the existing "
             "summary provided in <previous-summary> tags.\n\nUpdate the existing structured "
             "summary with new information.")
PI_TURN_PREFIX = ("This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent "
                  "work) is retained.\n\nSummarize the prefix to provide context for the "
                  "retained suffix:")
CLAUDE_CODE = ("Your task is to create a detailed summary of the conversation so far, paying "
               "close attention to the user's explicit requests and your previous actions.")
CODEX = ("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for "
         "another LLM that will resume the task.")
HANDOFFS = {
    "agent-server and pi": summary_message_text(PREVIOUS),
    "claude-code": "This session is being continued from a previous conversation that ran out "
                   "of context. The summary below covers the earlier portion of the "
                   f"conversation.\n\nSummary:\n{PREVIOUS}",
    "codex": "Another language model started to solve this problem and produced a summary of "
             "its thinking process. You also have access to the state of the tools that were "
             "used by that language model. Use this to build on the work that has already "
             "been done and avoid duplicating work. Here is the summary produced by the other "
             "language model, use the information in this summary to  assist with your own "
             f"analysis:\n{PREVIOUS}",
}


def _asking(text: str, *, tools: bool = True, system: str = "") -> Transcript:
    specs = (ToolSpec("read", {}),) if tools else ()
    return Transcript(system, specs, (
        TranscriptMessage("user", (TextPart("Fix the invoice test."),)),
        TranscriptMessage("assistant", (TextPart("Done."),)),
        TranscriptMessage("user", (TextPart(text),)),
    ))


@pytest.mark.parametrize("instruction", [
    PI_INITIAL, PI_UPDATE, PI_TURN_PREFIX, CLAUDE_CODE, CODEX,
    build_summary_instruction(kept_messages=2, previous_summary_in_context=False),
    build_summary_prompt([UserMessage.of_text("hi")]),
    build_turn_prefix_prompt([UserMessage.of_text("hi")]),
])
def test_each_clients_summary_instruction_is_recognised(instruction: str) -> None:
    assert is_summary_request(_asking(instruction))
    assert is_summary_request(_asking(instruction, tools=False))


@pytest.mark.parametrize("prompt", [
    "Fix the failing invoice test.",
    "Summarise nothing; just run the tests.",
    "Read the summary.py module and explain it.",
])
def test_ordinary_prompts_are_not_summary_requests(prompt: str) -> None:
    assert not is_summary_request(_asking(prompt))


def test_a_summariser_call_without_tools_is_recognised_by_its_system_prompt() -> None:
    system = "You are a context summarization assistant."
    assert is_summary_request(_asking("<conversation>\n[User]: hi\n</conversation>",
                                      tools=False, system=system))
    assert not is_summary_request(_asking("hi", tools=True, system=system))


def test_turn_prefix_requests_are_told_apart() -> None:
    assert asks_for_turn_prefix(PI_TURN_PREFIX)
    assert asks_for_turn_prefix(build_turn_prefix_prompt([UserMessage.of_text("hi")]))
    assert not asks_for_turn_prefix(PI_INITIAL) and not asks_for_turn_prefix(CLAUDE_CODE)


@pytest.mark.parametrize("client", sorted(HANDOFFS))
def test_each_clients_handed_over_summary_is_recognised_and_folded(client: str) -> None:
    text = HANDOFFS[client]
    assert is_summary_handoff(text)
    assert "## Goal" in handoff_body(text) and not handoff_body(text).startswith("This session")
    transcript = Transcript("", (), (
        TranscriptMessage("user", (TextPart(text), TextPart("Now run the tests."))),
        TranscriptMessage("assistant", (TextPart("They pass."),)),
        TranscriptMessage("user", (TextPart(CODEX),)),
    ))
    summary = summarise(transcript)
    assert "Never touch the database schema." in summary  # folded from the previous summary
    assert "`billing/api.py`" in summary.split("## Files modified")[1]
    assert '"Port the billing module' in summary.split("## Constraints")[0]  # its goal kept
    assert not is_summary_handoff("Fix the summary module: it crashes on empty input.")


def test_pis_serialised_calls_and_file_lists_are_read() -> None:
    conversation = (
        "<conversation>\n[User]: Fix the parser. Never change the public API.\n\n"
        '[Assistant tool calls]: read(path="src/parse.py"); bash(command="cat -n src/lex.py '
        "| sed -n '1,40p'\")\n\n[Tool result]: def parse(): ...\n\n"
        '[Assistant tool calls]: edit(path="src/parse.py", edits=[{"oldText": "a; b", '
        '"newText": "c"}])\n</conversation>\n\n'
        f"<previous-summary>\n## Goal\nFix the parser.\n\n<read-files>\nsrc/io.py\n</read-files>"
        f"\n</previous-summary>\n\n{PI_UPDATE}"
    )
    summary = summarise(_asking(conversation, tools=False))
    files_read = summary.split("## Files read")[1].split("##")[0]
    assert "`src/lex.py`" in files_read and "`src/io.py`" in files_read
    assert "`src/parse.py`" in summary.split("## Files modified")[1].split("##")[0]
    assert "Never change the public API." in summary


def test_codex_shell_reads_and_patches_count_as_files() -> None:
    patch = "*** Begin Patch\n*** Update File: src/parse.py\n@@\n-a\n+b\n*** End Patch"
    transcript = Transcript("", (ToolSpec("exec_command", {}),), (
        TranscriptMessage("user", (TextPart("Fix the parser."),)),
        TranscriptMessage("assistant", (
            ToolCallPart("c1", "exec_command", {"cmd": "cat -n src/lex.py | sed -n '1,9p'"}),
            ToolCallPart("c2", "apply_patch", {"input": patch}),
        )),
        TranscriptMessage("user", (ToolResultPart("c1", "1 x"), ToolResultPart("c2", "ok"),
                                   TextPart(CODEX))),
    ))
    summary = summarise(transcript)
    assert "`src/lex.py`" in summary.split("## Files read")[1].split("##")[0]
    assert "`src/parse.py`" in summary.split("## Files modified")[1].split("##")[0]


def test_the_lossy_summariser_keeps_a_short_goal_and_the_file_lists_only() -> None:
    transcript = Transcript("", (ToolSpec("read", {}),), (
        TranscriptMessage("user", (TextPart(summary_message_text(PREVIOUS)),
                                   TextPart("Now fix the invoice test. Do not add dependencies."))),
        TranscriptMessage("assistant", (ToolCallPart("c1", "read", {"path": "tests/t.py"}),)),
        TranscriptMessage("user", (ToolResultPart("c1", "def test(): ..."), TextPart(CODEX))),
    ))
    lossy = summarise(transcript, "lossy")
    assert [line for line in lossy.splitlines() if line.startswith("#")] == [
        "## Goal", "## Files read", "## Files modified"]
    assert len(lossy.split("## Files read")[0]) <= len("## Goal\n\n\n") + LOSSY_GOAL_CHARS
    assert "Port the billing module" in lossy
    assert "dependencies" not in lossy and "database schema" not in lossy
    assert "`tests/t.py`" in lossy and "`billing/client.py`" in lossy
    assert "`billing/api.py`" in lossy.split("## Files modified")[1]
    faithful = summarise(transcript, "faithful")
    assert "Do not add dependencies." in faithful and "Never touch the database" in faithful


def test_a_summary_cut_to_a_number_of_characters_ends_at_a_line_break() -> None:
    transcript = Transcript("", (ToolSpec("read", {}),), (
        TranscriptMessage("user", (TextPart(summary_message_text(PREVIOUS)),
                                   TextPart("Now fix the invoice test. Do not add dependencies."))),
        TranscriptMessage("assistant", (ToolCallPart("c1", "read", {"path": "tests/t.py"}),)),
        TranscriptMessage("user", (ToolResultPart("c1", "def test(): ..."), TextPart(CODEX))),
    ))
    whole = summarise(transcript, "faithful")
    cut = summarise(transcript, "faithful", max_chars=300)
    assert len(whole) > 300 >= len(cut) and whole.startswith(cut)
    assert whole[len(cut)] == "\n"  # the cut ends a line
    assert summarise(transcript, "faithful", max_chars=len(whole)) == whole


def _asked_with(note: str | None) -> Transcript:
    """Three prompts and a failed command, then agent-server's summary instruction with what
    it says comes verbatim after the summary."""
    carried = {
        None: None,
        "all": Carried(("Fix the parser.", "Then the docs.", "Now the tests."),
                       failures=(Failure("bash", "make: no rule", ""),)),
        "newest": Carried(("Then the docs.", "Now the tests."), 1),
    }[note]
    return Transcript("", (ToolSpec("bash", {}),), (
        TranscriptMessage("user", (TextPart("Fix the parser. Never push to main."),)),
        TranscriptMessage("assistant", (TextPart("Done."),)),
        TranscriptMessage("user", (TextPart("Then the docs."),)),
        TranscriptMessage("assistant", (ToolCallPart("c1", "bash", {"command": "make"}),)),
        TranscriptMessage("user", (ToolResultPart("c1", "make: no rule", is_error=True),)),
        TranscriptMessage("assistant", (TextPart("No such rule."),)),
        TranscriptMessage("user", (TextPart("Now the tests."), TextPart(
            build_summary_instruction(kept_messages=0, previous_summary_in_context=False,
                                      carried=carried)))),
    ))


def test_a_summary_refers_to_what_the_instruction_says_is_carried_instead_of_copying_it() -> None:
    # An instruction-following summariser does not copy out what the client says it carries
    # verbatim after the summary; it still quotes what is not carried.
    plain = summarise(_asked_with(None))
    assert 'User said: "Then the docs."' in plain and "make: no rule" in plain
    carried = summarise(_asked_with("all"))
    assert "User said:" not in carried and "The user's messages are carried" in carried
    assert "make: no rule" not in carried.split("### Blocked")[1].split("##")[0]
    assert "The failed tool calls are carried" in carried
    assert '"Never push to main."' in carried  # the constraints are still quoted
    assert count_tokens(carried) < count_tokens(plain)
    newest = summarise(_asked_with("newest"))
    assert 'User said: "Fix the parser. Never push to main."' in newest
    assert 'User said: "Then the docs."' not in newest
    assert "make: no rule" in newest  # the failed call is not said to be carried


# --- a turn compacted in its middle goes on from where the summary says -----------------------

PARTS_PROMPT = "Read the three parts of the report, in order."
PARTS = parse_scenario({"name": "parts", "turns": [{"user": PARTS_PROMPT, "steps": [
    {"tools": [{"name": "read", "arguments": {"path": f"part-{n}.txt"}}]} for n in (1, 2, 3)
] + [{"text": "All three parts read."}]}]})


def _codex_before_compacting() -> tuple[TranscriptMessage, ...]:
    """Codex's history with two steps of the turn done, then its compaction prompt."""
    messages: list[TranscriptMessage] = [TranscriptMessage("user", (TextPart(PARTS_PROMPT),))]
    for step in (0, 1):
        call = ToolCallPart(f"call_sim_0_{step}_0_0000000{step}", "read",
                            {"path": f"part-{step + 1}.txt"})
        messages += [TranscriptMessage("assistant", (call,)),
                     TranscriptMessage("user", (ToolResultPart(call.id, f"part {step + 1}"),))]
    return (*messages, TranscriptMessage("user", (TextPart(CODEX),)))


@pytest.mark.parametrize(("mode", "resumed_at"), [("faithful", "scenario:0:2"),
                                                  ("lossy", "scenario:0:3")])
def test_a_turn_compacted_in_its_middle_goes_on_from_where_the_summary_says(
    mode: SummaryMode, resumed_at: str
) -> None:
    """Codex keeps the prompts and its summary, no result: a faithful summary says which step
    was done last, and the model goes on with the next one (the third part is read); a lossy
    one does not say, and the model goes on to the turn's answer."""
    tools = (ToolSpec("read", {"type": "object", "properties": {"path": {}}}),)
    asked = Transcript("", tools, _codex_before_compacting())
    summary = plan_reply(asked, PARTS, id_prefix="call", summariser=mode)
    assert summary.source == "summary"
    assert ("The last step done: step 1 of request 0." in summary.text) == (mode == "faithful")
    handoff = HANDOFFS["codex"].replace(PREVIOUS, summary.text)
    after = Transcript("", tools, (TranscriptMessage("user", (TextPart(PARTS_PROMPT),
                                                              TextPart(handoff))),))
    reply = plan_reply(after, PARTS, id_prefix="call", summariser=mode)
    assert reply.source == resumed_at
    if mode == "faithful":
        assert [call.arguments for call in reply.calls] == [{"path": "part-3.txt"}]


def test_a_summary_of_a_serialised_conversation_names_its_last_call() -> None:
    """pi's summariser call (ours on a fresh prompt is the same shape): the calls carry no
    ids, so the summary names the last call made, and the step is found by it."""
    conversation = ("<conversation>\n[User]: " + PARTS_PROMPT + "\n[Assistant tool call]: "
                    'read(path="part-1.txt")\n[Tool result read]: part 1\n'
                    '[Assistant tool calls]: read(path="part-2.txt")\n[Tool result read]: '
                    "part 2\n</conversation>")
    system = "You are a context summarization assistant."
    summary = plan_reply(_asking(conversation, tools=False, system=system), PARTS,
                         id_prefix="toolu")
    assert summary.source == "summary"
    assert 'The last call made: ["read", {"path": "part-2.txt"}]' in summary.text
    assert "The last step done" not in summary.text
    handoff = HANDOFFS["agent-server and pi"].replace(PREVIOUS, summary.text)
    tools = (ToolSpec("read", {"type": "object", "properties": {"path": {}}}),)
    after = Transcript("", tools, (TranscriptMessage("user", (TextPart(handoff),)),
                                   TranscriptMessage("user", (TextPart(PARTS_PROMPT),))))
    # the prompt after the summary is a new prompt: it starts the turn ...
    assert plan_reply(after, PARTS, id_prefix="toolu").source == "scenario:0:0"
    # ... but kept before it, the turn is taken up where the summary says
    kept = Transcript("", tools, (TranscriptMessage("user", (TextPart(PARTS_PROMPT),
                                                             TextPart(handoff))),))
    reply = plan_reply(kept, PARTS, id_prefix="toolu")
    assert reply.source == "scenario:0:2"
    assert [call.arguments for call in reply.calls] == [{"path": "part-3.txt"}]


def test_a_detour_before_a_step_leaves_that_step_to_come() -> None:
    """A fetch the third step needed came last: the second step is the last one done."""
    call = ToolCallPart("call_sim_0_2d0_0_00000009", "read", {"path": "part-2.txt"})
    messages = (*_codex_before_compacting()[:-1], TranscriptMessage("assistant", (call,)),
                TranscriptMessage("user", (ToolResultPart(call.id, "part 2"),)),
                TranscriptMessage("user", (TextPart(CODEX),)))
    tools = (ToolSpec("read", {"type": "object", "properties": {"path": {}}}),)
    summary = plan_reply(Transcript("", tools, messages), PARTS, id_prefix="call")
    assert "The last step done: step 1 of request 0." in summary.text


def test_a_turn_the_previous_summary_split_stays_the_one_in_progress() -> None:
    """pi after an overflow in the middle of a turn: its summary is the history's, then the
    split turn's (`## Request`). Its next compaction has no prompt to summarise, only calls:
    the split turn's request is still the one in progress, so that a model handed the new
    summary takes up that turn, not the one before it."""
    split = (f"{PREVIOUS}\n\n---\n\n**Turn Context (split turn):**\n\n## Request\n"
             '"Run the invoice tests again."\n\n## Done so far in this turn\n'
             "- Ran `pytest tests/invoice`\n\n## State at the cut\n- Working through the request.")
    conversation = ("<conversation>\n[Assistant tool calls]: bash(command=\"pytest tests/invoice\")"
                    "\n\n[Tool result]: 3 passed\n</conversation>")
    summary = summarise(_asking(f"{conversation}\n\n<previous-summary>\n{split}\n"
                                f"</previous-summary>\n\n{PI_UPDATE}", tools=False))
    in_progress = summary.split("### In progress")[1].split("###")[0]
    assert '"Run the invoice tests again."' in in_progress
    assert "Port the billing module" not in in_progress
    assert 'Answered: "Port the billing module' in summary.split("### Done")[1].split("###")[0]
    assert 'Continue with the latest request: "Run the invoice tests again."' in summary
    scenario = parse_scenario({"turns": [
        {"user": "Port the billing module to the new API.", "steps": [{"text": "Ported."}]},
        {"user": "Run the invoice tests again.",
         "steps": [{"tools": [{"name": "bash", "arguments": {"command": "pytest tests/invoice"}}]},
                   {"text": "They pass."}]},
    ]})
    handed = Transcript("", (ToolSpec("bash", {"type": "object", "properties": {"command": {}}}),),
                        (TranscriptMessage("user", (TextPart(summary_message_text(summary)),)),))
    assert max(scenario.turns_quoted(summary)) == 1
    assert plan_reply(handed, scenario, id_prefix="toolu").source.startswith("scenario:1:")


# --- a fetch a compaction took away is not fetched once more --------------------------------

LOG_PROMPT = "Run the long job again and tell me how it ends."
LOG = parse_scenario({"name": "log", "facts": [
    {"id": "job-end", "kind": "output", "about": "how the job ends", "text": "exit 3 at step 9",
     "fetch": {"name": "bash", "arguments": {"command": "./job --verbose"}}},
    {"id": "job-start", "kind": "output", "about": "how the job starts", "text": "step 1 of 9",
     "fetch": {"name": "bash", "arguments": {"command": "./job --head"}}},
], "turns": [
    {"user": "Run the long job.", "steps": [
        {"tools": [{"name": "bash", "arguments": {"command": "./job --verbose"}}]},
        {"text": "It ran."}]},
    {"user": LOG_PROMPT, "steps": [
        {"tools": [{"name": "bash", "arguments": {"command": "./job --quiet"}}]},
        {"needs": ["job-end", "job-start"], "text": "It ends as before."}]},
]})
BASH = (ToolSpec("bash", {"type": "object", "properties": {"command": {}}}),)
FETCHING = "That call fetched again what a step needed."


def test_a_fetch_again_compacted_away_is_named_and_run_again_narrowed() -> None:
    """The output a step needs is fetched again and overflows the window; the compaction
    that follows takes it away. The summary says so, and the model taken up there runs the
    command again narrowed to the lines it looks for, not whole: whole, it would overflow
    again, and again (pi on a 32k window looped so)."""
    fetch = ToolCallPart("call_sim_1_1d0_0_00000001", "bash", {"command": "./job --verbose"})
    asked = Transcript("", BASH, (
        TranscriptMessage("user", (TextPart(LOG_PROMPT),)),
        TranscriptMessage("assistant", (ToolCallPart("call_sim_1_0_0_00000000", "bash",
                                                     {"command": "./job --quiet"}),)),
        TranscriptMessage("user", (ToolResultPart("call_sim_1_0_0_00000000", "done"),)),
        TranscriptMessage("assistant", (fetch,)),
        TranscriptMessage("user", (ToolResultPart(fetch.id, "... " * 50), TextPart(CODEX))),
    ))
    note = "Fetched again for step 1 of request 1, then compacted away: needs 0."
    summary = plan_reply(asked, LOG, id_prefix="call")
    assert note in summary.text
    handoff = HANDOFFS["codex"].replace(PREVIOUS, summary.text)
    after = Transcript("", BASH, (TranscriptMessage("user", (TextPart(LOG_PROMPT),
                                                             TextPart(handoff))),))
    reply = plan_reply(after, LOG, id_prefix="call")
    assert reply.source == "recovery:1:1:job-end"
    assert [call.arguments for call in reply.calls] == [
        {"command": "./job --verbose 2>&1 | grep -E 'exit 3 at '"}]
    # its result holds the line; the other need is fetched whole, and compacted away too:
    # the next summary names both
    (narrowed,) = reply.calls
    head = ToolCallPart("call_sim_1_1d1_0_00000002", "bash", {"command": "./job --head"})
    fetched = (
        TranscriptMessage("assistant", (ToolCallPart(narrowed.id, "bash", narrowed.arguments),)),
        TranscriptMessage("user", (ToolResultPart(narrowed.id, "exit 3 at step 9"),)),
        TranscriptMessage("assistant", (head,)),
        TranscriptMessage("user", (ToolResultPart(head.id, "..."), TextPart(CODEX))),
    )
    again = plan_reply(Transcript("", BASH, (*after.messages, *fetched)), LOG, id_prefix="call")
    assert "compacted away: needs 0, 1." in again.text
    # without the note, the model fetches it whole again
    plain = Transcript("", BASH, (TranscriptMessage("user", (
        TextPart(LOG_PROMPT), TextPart(handoff.replace(note, "")))),))
    reply = plan_reply(plain, LOG, id_prefix="call")
    assert [call.arguments for call in reply.calls] == [{"command": "./job --verbose"}]


def test_a_serialised_summary_whose_last_call_was_the_fetch_runs_it_again_narrowed() -> None:
    """pi's summary names the last call made: when it is the fetch of a need of the step
    taken up, that need's command runs again narrowed; a fetch no command makes (a read) is
    not made again, and the need is lost."""
    previous = (f"{PREVIOUS}\n\n## Where the work stands\n"
                'The last call made: ["bash", {"command": "./job --verbose"}]\n' + FETCHING)
    handoff = summary_message_text(previous)
    after = Transcript("", BASH, (TranscriptMessage("user", (TextPart(LOG_PROMPT),
                                                             TextPart(handoff))),))
    reply = plan_reply(after, LOG, id_prefix="toolu")
    assert [call.arguments["command"] for call in reply.calls] == [
        "./job --verbose 2>&1 | grep -E 'exit 3 at '"]
    # a step's own call (the model did not say it was fetching) is fetched whole once
    own = Transcript("", BASH, (TranscriptMessage("user", (
        TextPart(LOG_PROMPT), TextPart(handoff.replace(FETCHING, "")))),))
    assert [call.arguments for call in plan_reply(own, LOG, id_prefix="toolu").calls] == [
        {"command": "./job --verbose"}]
    # the summary of a serialised conversation says so when the model said it was fetching
    said = ("<conversation>\n[User]: " + LOG_PROMPT + "\n\n[Assistant]: I no longer have how "
            "the job ends in front of me, so I will look at it again.\n\n[Assistant tool "
            'calls]: bash(command="./job --verbose")\n</conversation>')
    summary = plan_reply(_asking(said, tools=False,
                                 system="You are a context summarization assistant."),
                         LOG, id_prefix="toolu").text
    assert summary.endswith('The last call made: ["bash", {"command": "./job --verbose"}]\n'
                            + FETCHING)
    other = handoff.replace("./job --verbose", "./job --quiet")
    fresh = Transcript("", BASH, (TranscriptMessage("user", (TextPart(LOG_PROMPT),
                                                             TextPart(other))),))
    assert [call.arguments for call in plan_reply(fresh, LOG, id_prefix="toolu").calls] == [
        {"command": "./job --verbose"}]
    read = parse_scenario({"name": "read", "facts": [
        {"id": "notes", "kind": "file", "about": "the notes", "path": "notes.txt",
         "lines": [1, 1], "text": "the deadline is Friday",
         "fetch": {"name": "read", "arguments": {"path": "notes.txt"}}},
    ], "turns": [{"user": LOG_PROMPT, "steps": [
        {"tools": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"needs": ["notes"], "text": "Friday."}]}]})
    tools = (ToolSpec("read", {"type": "object", "properties": {"path": {}}}),)
    last_read = summary_message_text(f"{PREVIOUS}\n\n## Where the work stands\n"
                                     'The last call made: ["read", {"path": "notes.txt"}]\n'
                                     + FETCHING)
    reply = plan_reply(Transcript("", tools, (TranscriptMessage("user", (
        TextPart(LOG_PROMPT), TextPart(last_read))),)), read, id_prefix="toolu")
    assert reply.source == "scenario:0:1" and not reply.calls
    assert [(c.fact, c.outcome) for c in reply.knowledge] == [("notes", "lost")]


def test_every_need_whose_fetch_was_compacted_away_is_run_again_narrowed() -> None:
    """Two needs printed by the same command (tomlkit's audit, before and after): once its
    run was compacted away, neither is fetched whole again, in the request after the summary
    nor in the one after that; a new prompt starts from what its request holds."""
    same = parse_scenario({"name": "same", "facts": [
        {"id": "job-end", "kind": "output", "about": "how the job ends",
         "text": "exit 3 at step 9",
         "fetch": {"name": "bash", "arguments": {"command": "./job --verbose"}}},
        {"id": "job-code", "kind": "output", "about": "the job's exit code",
         "text": "exit code 3 reported",
         "fetch": {"name": "bash", "arguments": {"command": "./job --verbose"}}},
    ], "turns": [{"user": LOG_PROMPT, "steps": [
        {"tools": [{"name": "bash", "arguments": {"command": "./job --quiet"}}]},
        {"needs": ["job-end", "job-code"], "text": "It ends as before."}]},
        {"user": "And now?", "steps": [{"needs": ["job-end"], "text": "The same."}]}]})
    handoff = summary_message_text(f"{PREVIOUS}\n\n## Where the work stands\n"
                                   'The last call made: ["bash", {"command": "./job --verbose"}]\n' + FETCHING)
    messages: tuple[TranscriptMessage, ...] = (
        TranscriptMessage("user", (TextPart(LOG_PROMPT), TextPart(handoff))),)
    commands = []
    for _ in range(2):
        reply = plan_reply(Transcript("", BASH, messages), same, id_prefix="toolu")
        (call,) = reply.calls
        commands.append(call.arguments["command"])
        messages += (TranscriptMessage("assistant", (ToolCallPart(call.id, "bash",
                                                                  call.arguments),)),
                     TranscriptMessage("user", (ToolResultPart(call.id, "nothing"),)))
    assert all(command.startswith("./job --verbose 2>&1 | grep -E ") for command in commands)
    messages += (TranscriptMessage("user", (TextPart("And now?"),)),)
    (call,) = plan_reply(Transcript("", BASH, messages), same, id_prefix="toolu").calls
    assert call.arguments == {"command": "./job --verbose"}


def test_a_serialised_summary_whose_last_call_fetched_a_steps_need_resumes_that_step() -> None:
    """The last call made was the fetch of what a step needed, not a step's own call: that
    step was still to come, and it is taken up (pi skipped pyparsing's notes so)."""
    notes = parse_scenario({"name": "notes", "facts": [
        {"id": "job-end", "kind": "output", "about": "how the job ends",
         "text": "exit 3 at step 9",
         "fetch": {"name": "bash", "arguments": {"command": "./job --verbose"}}},
    ], "turns": [{"user": LOG_PROMPT, "steps": [
        {"tools": [{"name": "bash", "arguments": {"command": "./job --quiet"}}]},
        {"needs": ["job-end"],
         "tools": [{"name": "bash", "arguments": {"command": "echo done > NOTES"}}]},
        {"text": "Noted."}]}]})
    handoff = summary_message_text(f"{PREVIOUS}\n\n## Where the work stands\n"
                                   'The last call made: ["bash", {"command": "./job --verbose"}]\n' + FETCHING)
    reply = plan_reply(Transcript("", BASH, (TranscriptMessage("user", (
        TextPart(LOG_PROMPT), TextPart(handoff))),)), notes, id_prefix="toolu")
    assert reply.source == "recovery:0:1:job-end"  # narrowed: its fetch was compacted away
    assert reply.calls[0].arguments["command"].startswith("./job --verbose 2>&1 | grep")
