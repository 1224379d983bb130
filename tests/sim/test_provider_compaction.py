"""The providers' own compaction and context editing, served by the simulator as documented,
through the official SDKs over HTTP: Anthropic's `compact_20260112` edit (trigger, pause,
instructions, the block in the stream and back in later requests, `usage.iterations`), its
on-demand compaction (a signed block), the clearing edits (`clear_tool_uses_20250919`,
`clear_thinking_20251015`) with their cache cost; OpenAI's `context_management` compaction and
`POST /responses/compact`, whose opaque item only the simulator can read."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from anthropic import AsyncAnthropic
from anthropic.types.beta import BetaRawMessageStreamEvent
from openai import AsyncOpenAI
from pydantic import TypeAdapter

from agent_server.llm.models import BUILTIN_MODELS, ModelRegistry
from agent_server.sim import anthropic_api
from agent_server.sim.anthropic_context import CLEARED_TOOL_RESULT
from agent_server.sim.compaction import seal, unseal
from agent_server.sim.simulator import Simulator
from tests.sim.builders import anthropic_tools, long_text, responses_tools

COMPACT = ["compact-2026-01-12"]
ON_DEMAND = ["compact-2026-09-04"]
BETA_EVENT = TypeAdapter(BetaRawMessageStreamEvent)
REGISTRY = ModelRegistry(BUILTIN_MODELS)


def history(filler: int) -> list[dict[str, Any]]:
    """A first prompt with a rule, an answer, and a long second message."""
    return [
        {"role": "user", "content": "Read the readme please. Never edit setup.py."},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
        {"role": "user", "content": "Here is the log:" + long_text(filler)},
    ]


def compact_edit(**fields: Any) -> dict[str, Any]:
    return {"edits": [{"type": "compact_20260112", **fields}]}


async def rejected(call: Any) -> anthropic.BadRequestError:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await call
    return caught.value


# --- Anthropic: the compaction edit ---------------------------------------------------------


async def test_the_compaction_edit_needs_its_beta_and_a_trigger_of_at_least_50000(
    anthropic_client: AsyncAnthropic,
) -> None:
    base = {"model": "sim-large", "max_tokens": 500, "messages": history(10)}
    error = await rejected(anthropic_client.beta.messages.create(
        **base, context_management=compact_edit()))
    assert "Input tag 'compact_20260112'" in str(error)
    error = await rejected(anthropic_client.beta.messages.create(
        **base, betas=COMPACT,
        context_management=compact_edit(trigger={"type": "input_tokens", "value": 49_999})))
    assert "greater than or equal to 50000" in str(error)
    error = await rejected(anthropic_client.beta.messages.create(
        **base, betas=COMPACT, extra_body={"context_management": compact_edit(keep=3)}))
    assert "keep: Extra inputs are not permitted" in str(error)


async def test_below_the_trigger_nothing_is_compacted(anthropic_client: AsyncAnthropic) -> None:
    message = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=500, betas=COMPACT, messages=history(1000),
        context_management=compact_edit())
    assert "compaction" not in [block.type for block in message.content]
    assert message.context_management is not None
    assert message.context_management.applied_edits == []


async def test_past_the_trigger_the_answer_opens_with_the_compaction_block(
    anthropic_client: AsyncAnthropic, simulator: Simulator,
) -> None:
    message = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=500, betas=COMPACT, messages=history(60_000),
        tools=anthropic_tools(), context_management=compact_edit(
            trigger={"type": "input_tokens", "value": 50_000}))
    kinds = [block.type for block in message.content]
    assert kinds[0] == "compaction" and len(kinds) > 1
    block = message.content[0]
    assert block.type == "compaction" and block.content is not None
    assert "Never edit setup.py" in block.content  # the faithful summariser kept the rule
    iterations = message.usage.iterations
    assert iterations is not None
    assert [entry.type for entry in iterations] == ["compaction", "message"]
    compaction, answer = iterations
    # The summary read the whole request; the answer only tools, system and the summary.
    assert compaction.input_tokens + compaction.cache_read_input_tokens > 60_000
    assert answer.input_tokens + answer.cache_read_input_tokens < 5_000
    assert message.usage.input_tokens == answer.input_tokens  # top level: the answer only
    record = simulator.records[-1]
    assert record.compactions == 1
    assert record.tokens is not None
    assert record.tokens.prompt == (compaction.input_tokens + compaction.cache_read_input_tokens
                                    + answer.input_tokens + answer.cache_read_input_tokens
                                    + answer.cache_creation_input_tokens)
    assert record.tokens.output == compaction.output_tokens + answer.output_tokens


async def test_pause_after_compaction_hands_the_block_back_alone(
    anthropic_client: AsyncAnthropic,
) -> None:
    message = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=500, betas=COMPACT, messages=history(60_000),
        context_management=compact_edit(trigger={"type": "input_tokens", "value": 50_000},
                                        pause_after_compaction=True))
    assert message.stop_reason == "compaction"
    assert [block.type for block in message.content] == ["compaction"]
    assert message.usage.input_tokens == 0 and message.usage.output_tokens == 0
    assert message.usage.iterations is not None
    assert [entry.type for entry in message.usage.iterations] == ["compaction"]


async def test_instructions_replace_the_default_instruction(
    anthropic_client: AsyncAnthropic,
) -> None:
    edit = compact_edit(trigger={"type": "input_tokens", "value": 50_000},
                        pause_after_compaction=True,
                        instructions="Summarize the early part of the current turn only.")
    message = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=500, betas=COMPACT, messages=history(60_000),
        context_management=edit)
    block = message.content[0]
    assert block.type == "compaction" and block.content is not None
    assert block.content.startswith("## Request")  # the turn-prefix summary was asked for


async def test_the_block_streams_whole_in_one_delta(anthropic_client: AsyncAnthropic,
                                                    server: Any) -> None:
    events: list[Any] = []
    async with anthropic_client.beta.messages.stream(
        model="sim-large", max_tokens=500, betas=COMPACT, messages=history(60_000),
        context_management=compact_edit(trigger={"type": "input_tokens", "value": 50_000}),
    ) as stream:
        async for event in stream:
            events.append(event)
        final = await stream.get_final_message()
    raw = [event for event in events if event.type in ("content_block_start",
                                                       "content_block_delta")]
    assert raw[0].type == "content_block_start" and raw[0].content_block.type == "compaction"
    deltas = [event for event in raw if event.type == "content_block_delta"
              and event.delta.type == "compaction_delta"]
    assert len(deltas) == 1
    block = final.content[0]
    assert block.type == "compaction" and block.content == deltas[0].delta.content
    assert final.usage.iterations is not None and len(final.usage.iterations) == 2
    for event in events:
        if event.type in ("message_start", "content_block_start", "content_block_delta",
                          "content_block_stop", "message_delta", "message_stop"):
            BETA_EVENT.validate_python(event.model_dump(exclude_none=True))


async def test_everything_before_the_block_is_dropped_when_it_comes_back(
    anthropic_client: AsyncAnthropic,
) -> None:
    block = {"type": "compaction", "content": "The user wants the readme read."}
    tail = [{"role": "assistant", "content": [block, {"type": "text", "text": "Going on."}]},
            {"role": "user", "content": "Read the readme please."}]
    edit = compact_edit()
    whole = await anthropic_client.beta.messages.count_tokens(
        model="sim-large", betas=COMPACT, messages=[*history(5_000), *tail],
        context_management=edit)
    alone = await anthropic_client.beta.messages.count_tokens(
        model="sim-large", betas=COMPACT,
        messages=[{"role": "assistant", "content": [block, {"type": "text", "text": "Going on."}]},
                  {"role": "user", "content": "Read the readme please."}],
        context_management=edit)
    assert whole.input_tokens == alone.input_tokens < 200


async def test_a_compaction_block_is_checked(anthropic_client: AsyncAnthropic) -> None:
    def with_block(block: dict[str, Any], **extra: Any) -> Any:
        return anthropic_client.beta.messages.create(
            model="sim-large", max_tokens=200, betas=COMPACT, **extra,
            messages=[{"role": "assistant", "content": [block]},
                      {"role": "user", "content": "Read the readme please."}])

    summary = {"type": "compaction", "content": "A summary."}
    error = await rejected(with_block(summary))
    assert "needs the `compact_20260112` edit" in str(error)
    error = await rejected(with_block({"type": "compaction", "content": ""},
                                      context_management=compact_edit()))
    assert "must not be empty" in str(error)
    # A failed compaction (null content) is a no-op, and the block may open the conversation.
    message = await with_block({"type": "compaction", "content": None},
                               context_management=compact_edit())
    assert message.stop_reason in ("tool_use", "end_turn")
    error = await rejected(anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=200, betas=COMPACT, context_management=compact_edit(),
        messages=[{"role": "user", "content": [summary]}]))
    assert "`compaction` blocks are not allowed in `user` messages" in str(error)


# --- Anthropic: on-demand compaction --------------------------------------------------------


async def summarize(client: AsyncAnthropic, messages: list[dict[str, Any]], **extra: Any
                    ) -> Any:
    return await client.beta.messages.create(
        model="sim-large", max_tokens=2000, betas=ON_DEMAND, messages=messages,
        compaction={"type": "summarize"}, **extra)


async def test_on_demand_compaction_returns_a_signed_block_alone(
    anthropic_client: AsyncAnthropic, simulator: Simulator,
) -> None:
    message = await summarize(anthropic_client, history(3_000))
    assert message.stop_reason == "compaction"
    assert [block.type for block in message.content] == ["compaction"]
    block = message.content[0]
    assert block.type == "compaction" and block.signature and block.content
    assert message.usage.input_tokens == 0 and message.usage.output_tokens == 0
    assert message.usage.iterations is not None
    (iteration,) = message.usage.iterations
    assert iteration.type == "compaction" and iteration.input_tokens > 3_000
    assert simulator.records[-1].compactions == 1
    # Sent back first, it stands for the conversation it summarised.
    answer = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=500, betas=ON_DEMAND, tools=anthropic_tools(),
        messages=[{"role": "assistant", "content": [block.model_dump(exclude_none=True)]},
                  {"role": "user", "content": "Read the readme please."}])
    assert answer.stop_reason == "tool_use"
    assert answer.usage.input_tokens < 1_500


async def test_on_demand_compaction_reads_the_cached_prefix(
    anthropic_client: AsyncAnthropic,
) -> None:
    messages = history(3_000)
    messages[-1] = {"role": "user", "content": [
        {"type": "text", "text": messages[-1]["content"], "cache_control": {"type": "ephemeral"}}
    ]}
    await anthropic_client.beta.messages.create(model="sim-large", max_tokens=200,
                                                messages=messages)
    message = await summarize(anthropic_client, messages)
    assert message.usage.iterations is not None
    assert message.usage.iterations[0].cache_read_input_tokens > 3_000


async def test_on_demand_compaction_refuses_what_the_api_refuses(
    anthropic_client: AsyncAnthropic,
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await anthropic_client.beta.messages.create(
            model="sim-large", max_tokens=200, messages=history(10),
            compaction={"type": "summarize"})
    assert "compaction: Extra inputs are not permitted" in str(caught.value)
    error = await rejected(summarize(anthropic_client, history(10),
                                     context_management={"edits": []}))
    assert "cannot be used together with `context_management`" in str(error)
    unfinished = [*history(10), {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]}]
    error = await rejected(summarize(anthropic_client, unfinished, tools=anthropic_tools()))
    assert error.error_code == "compaction_incomplete_turn"
    error = await rejected(summarize(anthropic_client, [{"role": "assistant", "content": [
        {"type": "compaction", "content": None}]}]))
    assert error.error_code == "compaction_nothing_to_summarize"


async def test_a_signed_block_must_come_back_as_it_was_returned(
    anthropic_client: AsyncAnthropic,
) -> None:
    block = (await summarize(anthropic_client, history(500))).content[0].model_dump(
        exclude_none=True)

    def send(*blocks: dict[str, Any], first: list[dict[str, Any]] | None = None) -> Any:
        return anthropic_client.beta.messages.create(
            model="sim-large", max_tokens=200, betas=ON_DEMAND,
            messages=[*(first or []), {"role": "assistant", "content": list(blocks)},
                      {"role": "user", "content": "Read the readme please."}])

    changed = {**block, "content": block["content"] + " And more."}
    assert (await rejected(send(changed))).error_code == "compaction_content_mismatch"
    forged = {**block, "signature": "c2ltLWZvcmdlZA=="}
    assert (await rejected(send(forged))).error_code == "compaction_signature_invalid"
    later = await rejected(send(block, first=[{"role": "user", "content": "Hello."}]))
    assert later.error_code == "compaction_block_misplaced"
    assert (await rejected(send(block, block))).error_code == "compaction_block_ambiguous"
    error = await rejected(anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=200, betas=[*ON_DEMAND, *COMPACT],
        context_management=compact_edit(),
        messages=[{"role": "assistant", "content": [block]},
                  {"role": "user", "content": "Hi."}]))
    assert "cannot be sent with a `compact_20260112` edit" in str(error)


# --- Anthropic: the clearing edits ----------------------------------------------------------


def tool_history(results: int, filler: int = 400) -> list[dict[str, Any]]:
    """A prompt, then `results` read calls and their long results, each result marked for
    the cache as a client marks its last user message."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the readme please."}]
    for index in range(results):
        call_id = f"toolu_read_{index}"
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": call_id, "name": "read", "input": {"path": f"f{index}"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id,
             "content": [{"type": "text", "text": f"file {index}:" + long_text(filler)}]}]})
    last = messages[-1]["content"][-1]
    last["cache_control"] = {"type": "ephemeral"}
    return messages


CLEAR = {"edits": [{"type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 1_500},
                    "keep": {"type": "tool_uses", "value": 2}}]}


async def test_clearing_replaces_old_results_and_reports_what_it_cleared(
    anthropic_client: AsyncAnthropic,
) -> None:
    message = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=300, tools=anthropic_tools(), messages=tool_history(6),
        context_management=CLEAR)
    assert message.context_management is not None
    (applied,) = message.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919"
    assert applied.cleared_tool_uses == 4
    assert applied.cleared_input_tokens > 4 * 350  # each about 400, for a placeholder
    parsed = anthropic_api.parse_request(
        {"model": "sim-large", "max_tokens": 300, "messages": tool_history(6),
         "context_management": CLEAR}, REGISTRY)
    results = [part.text for message_ in parsed.transcript.messages
               for part in message_.tool_results]
    assert results[:4] == [CLEARED_TOOL_RESULT] * 4
    assert results[4].startswith("file 4:")


async def test_each_clearing_rewrites_the_cache_after_the_cleared_result(
    anthropic_client: AsyncAnthropic,
) -> None:
    async def step(results: int) -> Any:
        return await anthropic_client.beta.messages.create(
            model="sim-large", max_tokens=300, tools=anthropic_tools(),
            system=[{"type": "text", "text": "You help." + long_text(1200),
                     "cache_control": {"type": "ephemeral"}}],
            messages=tool_history(results), context_management=CLEAR)

    await step(6)
    same = await step(6)
    assert same.usage.cache_creation_input_tokens == 0  # the same clearing: all read
    grown = await step(7)
    # One more tool use moves the clearing one result on: everything after the newly cleared
    # result (two long results, the new call) is written again.
    assert grown.usage.cache_creation_input_tokens > 2 * 400
    assert grown.usage.cache_read_input_tokens < same.usage.cache_read_input_tokens


async def test_clear_at_least_holds_a_small_clearing_back(
    anthropic_client: AsyncAnthropic,
) -> None:
    edit = {"edits": [{**CLEAR["edits"][0],
                       "clear_at_least": {"type": "input_tokens", "value": 100_000}}]}
    message = await anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=300, messages=tool_history(6), tools=anthropic_tools(),
        context_management=edit)
    assert message.context_management is not None
    assert message.context_management.applied_edits == []


async def test_clearing_thinking_comes_first_and_needs_thinking(
    anthropic_client: AsyncAnthropic,
) -> None:
    thinking = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns",
                                                             "value": 1}}
    error = await rejected(anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=3000, messages=history(10),
        context_management={"edits": [thinking]}))
    assert "requires thinking to be enabled" in str(error)
    error = await rejected(anthropic_client.beta.messages.create(
        model="sim-large", max_tokens=3000, messages=history(10),
        thinking={"type": "enabled", "budget_tokens": 1024},
        context_management={"edits": [CLEAR["edits"][0], thinking]}))
    assert "must be the first edit" in str(error)


# --- OpenAI Responses -----------------------------------------------------------------------


def responses_history(filler: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Read the readme please. Never edit setup.py."},
        {"role": "assistant", "content": "Noted."},
        {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a\nb"},
        {"role": "user", "content": "Here is the log:" + long_text(filler)},
    ]


async def openai_rejected(call: Any) -> openai.BadRequestError:
    with pytest.raises(openai.BadRequestError) as caught:
        await call
    return caught.value


async def test_context_management_is_checked(openai_client: AsyncOpenAI) -> None:
    def create(entries: Any) -> Any:
        return openai_client.responses.create(model="gpt-5.5", input="Hi.",
                                              context_management=entries)

    error = await openai_rejected(create([{"type": "truncate"}]))
    assert error.code == "invalid_value" and "'compaction'" in str(error)
    error = await openai_rejected(create([{"type": "compaction", "compact_threshold": 0}]))
    assert error.code == "integer_below_min_value"
    error = await openai_rejected(create([{"type": "compaction", "keep": 2}]))
    assert error.code == "unknown_parameter"


async def test_past_the_threshold_the_stream_carries_a_compaction_item(
    openai_client: AsyncOpenAI, simulator: Simulator,
) -> None:
    stream = await openai_client.responses.create(
        model="gpt-5.5", input=responses_history(3_000), tools=responses_tools(), stream=True,
        store=False, context_management=[{"type": "compaction", "compact_threshold": 2_000}])
    kinds: list[str] = []
    final: Any = None
    async for event in stream:
        kinds.append(event.type)
        if event.type == "response.completed":
            final = event.response
    assert "response.compaction.compacting" in kinds
    assert final.output[0].type == "compaction"
    assert unseal(final.output[0].encrypted_content) is not None
    record = simulator.records[-1]
    assert record.compactions == 1
    # Billed: the compaction pass over the whole input, then the answer.
    assert final.usage.input_tokens == record.tokens.prompt > 3_000
    below = await openai_client.responses.create(
        model="gpt-5.5", input=responses_history(10), tools=responses_tools(), store=False,
        context_management=[{"type": "compaction", "compact_threshold": 2_000}])
    assert below.output[0].type != "compaction"


async def test_the_compact_endpoint_returns_the_user_messages_and_one_item(
    openai_client: AsyncOpenAI, simulator: Simulator,
) -> None:
    compacted = await openai_client.responses.compact(model="gpt-5.5",
                                                      input=responses_history(2_000))
    assert compacted.object == "response.compaction"
    kinds = [(item.type, getattr(item, "role", None)) for item in compacted.output]
    assert kinds == [("message", "user"), ("message", "user"), ("compaction", None)]
    assert compacted.usage.input_tokens > 2_000 and compacted.usage.output_tokens > 0
    assert simulator.records[-1].api == "openai-responses-compact"
    with pytest.raises(openai.BadRequestError) as caught:
        await openai_client.responses.compact(model="gpt-5.5", input="Hi.",
                                              extra_body={"tools": []})
    assert caught.value.code == "unknown_parameter"


async def test_an_item_stands_for_all_but_the_user_messages_before_it(
    openai_client: AsyncOpenAI, server: Any,
) -> None:
    item = {"type": "compaction", "encrypted_content": seal("The readme was read.")}
    async def tokens(items: list[dict[str, Any]]) -> int:
        answer = await openai_client.responses.create(model="gpt-5.5", input=items, store=False)
        return answer.usage.input_tokens

    full = await tokens([*responses_history(2_000), item,
                         {"role": "user", "content": "Read the readme please."}])
    users = [entry for entry in responses_history(2_000) if entry.get("role") == "user"]
    alone = await tokens([*users, item, {"role": "user", "content": "Read the readme please."}])
    assert full == alone


async def test_an_item_the_simulator_did_not_issue_is_refused(openai_client: AsyncOpenAI) -> None:
    sealed = seal("A summary.")
    for forged in ("gAAAAABnot-ours", sealed[:-6] + "AAAA==",
                   json.dumps({"summary": "plain text"})):
        error = await openai_rejected(openai_client.responses.create(
            model="gpt-5.5", store=False,
            input=[{"type": "compaction", "encrypted_content": forged},
                   {"role": "user", "content": "Hi."}]))
        assert error.code == "invalid_encrypted_content"
        assert "could not be verified" in str(error)
