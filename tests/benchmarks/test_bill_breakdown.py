"""The bill breakdown: a logged request's usage laid over its blocks, in prefix order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_server.llm.cost import call_cost
from agent_server.llm.models import BUILTIN_MODELS
from benchmarks.bill_breakdown import prompt_blocks, run_bill

PRICE = next(model.pricing for model in BUILTIN_MODELS if model.id == "sim-large")

TOOL = {"name": "read", "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def messages_record(
    read: int, written: int, prompt: int | None = None, *, model: str = "sim-large",
    result_lines: int = 50,
) -> dict[str, Any]:
    body = {
        "model": model, "max_tokens": 1000, "tools": [TOOL],
        "system": [{"type": "text", "text": "You are a coding agent. " * 20}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read setup.py."}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "setup.py"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1",
                 "content": "import x\n" * result_lines},
            ]},
        ],
    }
    record: dict[str, Any] = {"index": 1, "api": "anthropic-messages", "status": 200,
                              "request": body}
    total = sum(tokens for _, tokens in prompt_blocks(record)) if prompt is None else prompt
    record["tokens"] = {"prompt": total, "cacheRead": read, "cacheWrite": written,
                        "cacheWrite1h": 0, "input": total - read - written, "output": 7}
    return record


def responses_record() -> dict[str, Any]:
    body = {
        "model": "sim-large", "instructions": "You are a coding agent.",
        "tools": [{"type": "function", "name": "read", "description": "Read a file.",
                   "parameters": TOOL["input_schema"], "strict": False}],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Read setup.py."}]},
            {"type": "function_call", "call_id": "c1", "name": "read",
             "arguments": "{\"path\":\"setup.py\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "import x\n" * 50},
        ],
    }
    return {"index": 1, "api": "openai-responses", "status": 200, "request": body}


def test_each_block_falls_in_its_category_on_both_apis() -> None:
    expected = ["tools", "system", "user", "tool call", "result: read"]
    assert [c for c, _ in prompt_blocks(messages_record(0, 0))] == expected
    assert [c for c, _ in prompt_blocks(responses_record())] == [
        "system", "tools", "user", "tool call", "result: read"]


def test_the_usage_is_laid_over_the_blocks_in_prefix_order() -> None:
    blocks = dict(prompt_blocks(messages_record(0, 0)))
    prefix = blocks["tools"] + blocks["system"]
    # The prefix was read, the user's message written, the rest sent uncached.
    record = messages_record(prefix, blocks["user"])
    bill = run_bill([json.dumps(record)])
    assert bill.shares["tools"].read == blocks["tools"]
    assert bill.shares["system"].read == blocks["system"]
    assert bill.shares["user"].written == blocks["user"]
    assert bill.shares["result: read"].uncached == blocks["result: read"]
    assert bill.shares["tool call"].read == bill.shares["tool call"].written == 0
    assert bill.first_prefix == prefix
    assert bill.prefix_dollars == pytest.approx(prefix * PRICE.cache_read / 1e6)
    uncached = blocks["tool call"] + blocks["result: read"]
    assert bill.dollars == pytest.approx(
        (prefix * PRICE.cache_read + blocks["user"] * PRICE.cache_write_5m
         + uncached * PRICE.input + 7 * PRICE.output)
        / 1e6)


def test_a_block_cut_by_the_cached_prefix_is_split() -> None:
    blocks = dict(prompt_blocks(messages_record(0, 0)))
    record = messages_record(blocks["tools"] + 3, 0)
    share = run_bill([json.dumps(record)]).shares["system"]
    assert (share.read, share.uncached) == (3, blocks["system"] - 3)


def test_a_log_the_simulator_counted_otherwise_is_refused() -> None:
    with pytest.raises(ValueError, match="the blocks hold"):
        run_bill([json.dumps(messages_record(0, 0, prompt=5))])


def test_a_long_prompt_is_billed_at_its_own_rates_as_the_product_bills_it() -> None:
    """A prompt past the model's long-prompt threshold costs its long rates (llm/cost.py's
    call_cost); the breakdown priced it at the short ones."""
    model = next(m for m in BUILTIN_MODELS if m.pricing.long_prompt is not None)
    record = messages_record(0, 0, model=model.id, result_lines=60_000)
    prompt = record["tokens"]["prompt"]
    assert prompt > model.pricing.long_prompt_threshold
    billed = call_cost(model.pricing, input=prompt, output=7).total
    assert run_bill([json.dumps(record)]).dollars == pytest.approx(billed)
