"""Scenarios: loading and validation, progression by tool ids, the fallback, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from agent_server.context.summary_prompt import summary_message_text
from agent_server.sim.responder import plan_reply
from agent_server.sim.scenario import (
    ScenarioError,
    default_scenario,
    load_scenario,
    parse_scenario,
)
from agent_server.sim.simulator import Simulator
from agent_server.sim.summary_requests import is_summary_request
from agent_server.sim.transcript import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    TranscriptMessage,
)
from tests.sim.builders import TEST_SCENARIO, anthropic_tools, chat_tools, responses_tools

GOOD: dict[str, Any] = {
    "name": "two",
    "turns": [
        {"user": "List it", "steps": [
            {"tools": [{"name": "ls", "arguments": {"path": "."}}]},
            {"text": "Done.", "textTokens": 10},
        ]},
    ],
}


def test_scenarios_load_from_json_and_yaml(tmp_path: Path) -> None:
    as_json = tmp_path / "s.json"
    as_json.write_text(json.dumps(GOOD))
    as_yaml = tmp_path / "s.yaml"
    as_yaml.write_text("turns:\n  - user: List it\n    steps:\n"
                       "      - tools: [{name: ls, arguments: {path: .}}]\n"
                       "      - {text: Done., textTokens: 10}\n")
    from_json, from_yaml = load_scenario(as_json), load_scenario(as_yaml)
    assert from_json.turns == from_yaml.turns
    assert from_json.turns[0].steps[1].text_tokens == 10
    assert from_json.find_turn("  List\n it ") == 0
    assert from_json.prompts == ("List it",)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"turns": []}, "expected a non-empty list of turns"),
        ({"turns": [{"user": "", "steps": [{"text": "x"}]}]}, r"turns\[0\]\.user"),
        ({"turns": [{"user": "a", "steps": [{"text": "x"}, {"text": "y"}]}]},
         r"turns\[0\]\.steps\[0\]: only the last step may end without tool calls"),
        ({"turns": [{"user": "a", "steps": [{"tools": [{"name": "ls"}]}]}]},
         r"turns\[0\]\.steps\[0\]: the last step must not call tools"),
        ({"turns": [{"user": "a", "steps": [{"text": "x", "textTokens": -1}]}]},
         r"turns\[0\]\.steps\[0\]\.textTokens"),
        ({"turns": [{"user": "a", "steps": [{"thinking": "only"}]}]},
         "a step needs text, textTokens or tools"),
        ({"turns": [{"user": "a", "steps": [{"text": "x", "tool": []}]}]}, "unknown keys"),
        ({"turns": [{"user": "a", "steps": [{"tools": [{"arguments": {}}]}, {"text": "x"}]}]},
         r"tools\[0\]\.name"),
        ({"turns": [{"user": "a", "steps": [{"text": "x"}]},
                    {"user": " a ", "steps": [{"text": "y"}]}]}, "repeats"),
    ],
)
def test_bad_scenarios_are_refused_with_the_field_named(data: Any, problem: str) -> None:
    with pytest.raises(ScenarioError, match=problem):
        parse_scenario(data, "bad.yaml")


def test_a_missing_or_broken_file_is_explained(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        load_scenario(broken)


def test_the_default_scenario_uses_the_agents_tools() -> None:
    scenario = default_scenario()
    shapes = {
        "read": {"path", "offset", "limit"},
        "write": {"path", "content"},
        "edit": {"path", "oldText", "newText"},
        "ls": {"path"},
        "find": {"pattern", "path"},
        "grep": {"pattern", "path", "glob"},
        "bash": {"command", "timeout"},
    }
    calls = [tool for turn in scenario.turns for step in turn.steps for tool in step.tools]
    assert 12 <= len(scenario.turns) <= 20
    assert sum(len(turn.steps) for turn in scenario.turns) >= 60
    assert {tool.name for tool in calls} == set(shapes)
    for tool in calls:
        assert set(tool.arguments) <= shapes[tool.name], tool


async def test_the_progression_follows_tool_ids_on_chat_and_responses(
    openai_client: AsyncOpenAI,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the readme please."}]
    first = await openai_client.chat.completions.create(
        model="sim-small", messages=messages, tools=chat_tools()
    )
    call = (first.choices[0].message.tool_calls or [])[0]
    # A result for a call the scenario made at turn 0, step 0 -> step 1, whatever came before.
    replay = [
        {"role": "user", "content": "Something else entirely."},
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "README.md"},
    ]
    second = await openai_client.chat.completions.create(
        model="sim-small", messages=replay, tools=chat_tools()
    )
    paths = [json.loads(c.function.arguments)["path"]
             for c in second.choices[0].message.tool_calls or []]
    assert paths == ["README.md", "setup.py"]

    items: list[Any] = [
        {"role": "user", "content": "Read the readme please."},
        {"type": "function_call", "call_id": "call_sim_0_1_0_x", "name": "read",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_sim_0_1_0_x", "output": "hi"},
    ]
    final = await openai_client.responses.create(model="sim-small", input=items,
                                                 tools=responses_tools())
    assert final.output_text == "The readme says hello."


async def test_a_prompt_after_a_compaction_summary_still_matches_its_turn(
    anthropic_client: AsyncAnthropic,
) -> None:
    message = await anthropic_client.messages.create(
        model="sim-small",
        max_tokens=100,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": summary_message_text("## Goal\nSomething earlier.")},
            {"type": "text", "text": "Read   the readme\nplease."},
        ]}],
        tools=anthropic_tools(),  # type: ignore[arg-type]
    )
    assert message.content[1].type == "tool_use"
    assert message.content[1].id.startswith("toolu_sim_0_0_0_")


async def test_answers_are_deterministic_so_retries_are_safe(
    simulator: Simulator, anthropic_client: AsyncAnthropic,
) -> None:
    request: dict[str, Any] = {
        "model": "sim-small",
        "max_tokens": 500,
        "tools": anthropic_tools(),
        "messages": [{"role": "user", "content": "Read the readme please."}],
    }
    first = await anthropic_client.messages.create(**request)
    again = await anthropic_client.messages.create(**request)
    assert [b.model_dump() for b in first.content] == [b.model_dump() for b in again.content]


async def test_fallback_explores_with_ls_then_read_then_answers(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hello there"}]
    outputs = {"ls": "README.md\nsrc/\nsetup.py\n", "read": "# Sample project\nMore text."}
    calls = []
    for _ in range(3):
        message = await anthropic_client.messages.create(
            model="sim-small", max_tokens=500, messages=messages,
            tools=anthropic_tools(("ls", "read", "bash")),
        )
        uses = [b for b in message.content if b.type == "tool_use"]
        calls += [(b.name, b.input) for b in uses]
        messages.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if uses:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": outputs[b.name]}
                for b in uses
            ]})
    assert calls == [("ls", {"path": "."}), ("read", {"path": "README.md"})]
    assert all(b["id"].startswith("toolu_sim_f_") for m in messages
               if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use")
    answer = message.content[0].text
    assert message.stop_reason == "end_turn"
    assert "README.md" in answer
    assert "# Sample project" in answer
    assert "hello there" in answer


async def test_fallback_without_tools_answers_in_text(openai_client: AsyncOpenAI) -> None:
    completion = await openai_client.chat.completions.create(
        model="sim-small", messages=[{"role": "user", "content": "What is 2 + 2?"}]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert "What is 2 + 2?" in (choice.message.content or "")


async def test_results_for_unknown_calls_get_a_text_answer(
    anthropic_client: AsyncAnthropic,
) -> None:
    message = await anthropic_client.messages.create(
        model="sim-small", max_tokens=300, tools=anthropic_tools(),
        messages=[
            {"role": "user", "content": "Do it."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_01Real", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Real", "content": "a.txt"}]},
        ],
    )
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]


# --- matching what other clients send ------------------------------------------------------


def _user(*parts: Any) -> TranscriptMessage:
    return TranscriptMessage("user", tuple(parts))


def _transcript(*messages: TranscriptMessage, tools: tuple[str, ...] = ("ls", "read")
                ) -> Transcript:
    specs = tuple(ToolSpec(name, {"type": "object", "properties": {"path": {"type": "string"}}})
                  for name in tools)
    return Transcript(system="", tools=specs, messages=messages)


def test_a_prompt_wrapped_in_a_clients_own_text_matches_its_turn() -> None:
    # aider appends its own instructions to the user's words.
    wrapped = _transcript(_user(TextPart(
        "Read   the readme please.\n\nOnly return code in SEARCH/REPLACE blocks; ask first.")))
    assert plan_reply(wrapped, TEST_SCENARIO, id_prefix="toolu").source == "scenario:0:0"


def test_of_several_prompts_kept_in_one_message_the_latest_wins() -> None:
    # Codex keeps every earlier prompt, then its summary, in the messages after a compaction.
    kept = _transcript(_user(TextPart("Think, then answer."),
                             TextPart("Read the readme please."),
                             TextPart("Another model summarised the work so far: ...")))
    assert plan_reply(kept, TEST_SCENARIO, id_prefix="call").source == "scenario:0:0"
    assert TEST_SCENARIO.find_turn_within("Write a long answer. Think, then answer.") == 2


def test_a_new_prompt_after_tool_results_starts_its_turn() -> None:
    # pi sends the next prompt after the results of a turn that stopped early.
    call = ToolCallPart("toolu_sim_0_0_0_ab", "ls", {"path": "."})
    results = ToolResultPart("toolu_sim_0_0_0_ab", "README.md")
    history = (_user(TextPart("Read the readme please.")),
               TranscriptMessage("assistant", (call,)))
    new_prompt = _transcript(*history, _user(results, TextPart("Think, then answer.")))
    assert plan_reply(new_prompt, TEST_SCENARIO, id_prefix="toolu").source == "scenario:2:0"
    # A client's reminder after the results is not a prompt: the turn goes on.
    reminder = _transcript(*history, _user(results, TextPart("<system-reminder>x</system-reminder>")))
    assert plan_reply(reminder, TEST_SCENARIO, id_prefix="toolu").source == "scenario:0:1"


@pytest.mark.parametrize(
    ("text", "tools", "summary"),
    [
        ("Your task is to create a detailed summary of the conversation so far.", True, True),
        ("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.", True,
         True),
        ("<conversation>[User]: hi</conversation>\nCreate a structured context checkpoint "
         "summary that another LLM will use.", False, True),
        ("Summarize the conversation above in five bullet points.", True, True),
        ("Scan the rest of the log for warnings and summarise them by component.", True, False),
        ("Give me a summary of the README.", True, False),
        ("Give me a summary of the README.", False, True),  # no tools: only a summary fits
        ("List the files.", False, False),
    ],
)
def test_summary_requests_are_recognised_whoever_sends_them(
    text: str, tools: bool, summary: bool
) -> None:
    transcript = _transcript(_user(TextPart("Read the readme please.")),
                             TranscriptMessage("assistant", (TextPart("It says hello."),)),
                             _user(TextPart(text)), tools=("ls",) if tools else ())
    assert is_summary_request(transcript) is summary


def test_a_summary_request_after_tool_results_gets_the_summary() -> None:
    call = ToolCallPart("call_sim_0_0_0_ab", "ls", {"path": "."})
    transcript = _transcript(
        _user(TextPart("Read the readme please.")), TranscriptMessage("assistant", (call,)),
        _user(ToolResultPart("call_sim_0_0_0_ab", "README.md"),
              TextPart("You are performing a CONTEXT CHECKPOINT COMPACTION.")),
        tools=(),
    )
    reply = plan_reply(transcript, TEST_SCENARIO, id_prefix="call")
    assert reply.source == "summary" and not reply.calls
    assert "Read the readme please." in reply.text


def test_a_request_without_tools_gets_no_tool_calls() -> None:
    reply = plan_reply(_transcript(_user(TextPart("Read the readme please.")), tools=()),
                       TEST_SCENARIO, id_prefix="toolu")
    assert reply.calls == ()
    assert reply.source == "scenario:0:2"  # the turn's answer instead
    assert reply.text == "The readme says hello."


def test_call_ids_differ_between_conversations_of_the_same_length() -> None:
    one = _transcript(_user(TextPart("Read the readme please.")))
    other = _transcript(_user(TextPart("Read the readme please. "), TextPart("again")))
    first = plan_reply(one, TEST_SCENARIO, id_prefix="toolu").calls[0].id
    second = plan_reply(other, TEST_SCENARIO, id_prefix="toolu").calls[0].id
    assert first != second
    assert first.startswith("toolu_sim_0_0_0_") and second.startswith("toolu_sim_0_0_0_")
    assert plan_reply(one, TEST_SCENARIO, id_prefix="toolu").calls[0].id == first


def test_a_prompt_only_a_compaction_summary_quotes_is_taken_up_again() -> None:
    # After an overflow, the retry carries only the summary, which quotes the user's request:
    # the model knows what was asked from the summary alone, and goes on to the turn's answer.
    summary = summary_message_text('## Goal\n"Read the readme please."')
    reply = plan_reply(_transcript(_user(TextPart(summary))), TEST_SCENARIO, id_prefix="toolu")
    last = len(TEST_SCENARIO.turns[0].steps) - 1
    assert reply.source == f"scenario:0:{last}"
    # Quoted next to a new prompt, it is the new prompt that is answered.
    both = _transcript(_user(TextPart(summary), TextPart("Something else entirely.")))
    assert plan_reply(both, TEST_SCENARIO, id_prefix="toolu").source.startswith("fallback")
