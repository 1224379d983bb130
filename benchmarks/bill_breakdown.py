"""Where a run's bill goes, by what each request carries: the prefix, each tool's results, ...

    python -m benchmarks.bill_breakdown LOG.jsonl [LOG.jsonl ...]

A request log of the recall or peers benchmark (`--out DIR`) holds each request as the client
sent it and the usage the simulator billed. Each request is parsed again by the simulator's
own API module, so every block has the tokens the simulator counted, and the usage is laid
over the blocks in prefix order: the first `cacheRead` tokens were read from the cache, the
next `cacheWrite` written, the rest sent uncached. Each block falls in one category (system,
tools, user, assistant text, tool call, the results of each tool), priced at the simulated
models' rates (BENCHMARKS.md, "Format overhead where nobody compacts").
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.llm.models import BUILTIN_MODELS, ModelRegistry, Pricing
from agent_server.sim import anthropic_api, openai_responses

_REGISTRY = ModelRegistry(BUILTIN_MODELS)
PREFIX = ("system", "tools")


@dataclass
class Share:
    """What one category of blocks cost over a run."""

    tokens: int = 0
    read: int = 0
    written: int = 0
    uncached: int = 0
    dollars: float = 0.0


@dataclass
class RunBill:
    requests: int = 0
    read: int = 0
    written: int = 0
    uncached: int = 0
    output: int = 0
    dollars: float = 0.0
    output_dollars: float = 0.0
    first_prefix: int = 0  # tokens of system and tools in the first request
    shares: dict[str, Share] = field(default_factory=lambda: defaultdict(Share))

    @property
    def prefix_dollars(self) -> float:
        return sum(self.shares[name].dollars for name in PREFIX if name in self.shares)


def prompt_blocks(record: dict[str, Any]) -> list[tuple[str, int]]:
    """(category, tokens) of each block of a logged request, in prefix order."""
    body = record["request"]
    if record["api"] == "openai-responses":
        request = openai_responses.parse_request(body, _REGISTRY, lambda _: None)
        names: dict[str, str] = {}
        blocks = []
        for block in request.blocks:
            kind, _, rest = block.canonical.partition("|")
            if kind in ("instructions", "tool"):
                category = "system" if kind == "instructions" else "tools"
            else:
                category = _responses_category(kind, json.loads(rest), names)
            blocks.append((category, block.tokens))
        return blocks
    if record["api"] != "anthropic-messages":
        raise ValueError(f"request {record.get('index')}: API {record['api']!r} not handled")
    messages = anthropic_api.parse_request(body, _REGISTRY)
    names = {}
    blocks = []
    for block in messages.blocks:
        canonical = block.canonical.removeprefix(messages.header)
        kind, _, rest = canonical.partition("|")
        if kind in ("tool", "system"):
            blocks.append(("tools" if kind == "tool" else "system", block.tokens))
        else:
            source = json.loads(rest.partition("|")[2])
            blocks.append((_anthropic_category(kind, source, names), block.tokens))
    return blocks


def _responses_category(kind: str, item: dict[str, Any], names: dict[str, str]) -> str:
    if kind == "message":
        role = item.get("role")
        return "user" if role == "user" else "system" if role in (
            "system", "developer") else "assistant text"
    if kind == "function_call":
        names[item["call_id"]] = item["name"]
        return "tool call"
    if kind == "function_call_output":
        return "result: " + names.get(item["call_id"], "?")
    return kind


def _anthropic_category(role: str, block: dict[str, Any], names: dict[str, str]) -> str:
    kind = block.get("type")
    if kind == "tool_use":
        names[block["id"]] = block["name"]
        return "tool call"
    if kind == "tool_result":
        return "result: " + names.get(block["tool_use_id"], "?")
    if kind in ("thinking", "compaction"):
        return str(kind)
    return "user" if role == "user" else "assistant text"


def _pricing(record: dict[str, Any]) -> Pricing:
    """The list prices of the request's model, dollars per million tokens (llm/models.py)."""
    model = _REGISTRY.get(str(record["request"].get("model")))
    if model is None:
        raise ValueError(f"request {record['index']}: no model {record['request'].get('model')}")
    return model.pricing


def run_bill(lines: Sequence[str]) -> RunBill:
    """The bill of one request log (its lines), by category."""
    bill = RunBill()
    for line in lines:
        record = json.loads(line)
        if record.get("status") != 200 or not record.get("request"):
            continue
        add_request(bill, record)
    return bill


def add_request(bill: RunBill, record: dict[str, Any]) -> None:
    tokens = record["tokens"]
    blocks = prompt_blocks(record)
    read, written = tokens["cacheRead"], tokens["cacheWrite"]
    price = _pricing(record).for_prompt(tokens["prompt"])  # a long prompt's rates, as billed
    write_price = price.cache_write_1h if tokens.get("cacheWrite1h") else price.cache_write_5m
    position = 0
    for category, count in blocks:
        start, end = position, position + count
        share = bill.shares[category]
        block_read = max(0, min(end, read) - start)
        block_written = max(0, min(end, read + written) - max(start, read))
        block_uncached = count - block_read - block_written
        share.tokens += count
        share.read += block_read
        share.written += block_written
        share.uncached += block_uncached
        share.dollars += (block_read * price.cache_read + block_written * write_price
                          + block_uncached * price.input) / 1e6
        position = end
    if position != tokens["prompt"]:
        raise ValueError(f"request {record['index']}: the blocks hold {position} tokens, "
                         f"the usage {tokens['prompt']}")
    if bill.requests == 0:
        bill.first_prefix = sum(count for category, count in blocks if category in PREFIX)
    bill.requests += 1
    bill.read += read
    bill.written += written
    bill.uncached += tokens["input"]
    bill.output += tokens["output"]
    bill.output_dollars += tokens["output"] * price.output / 1e6
    bill.dollars = sum(s.dollars for s in bill.shares.values()) + bill.output_dollars


def report(name: str, bill: RunBill) -> str:
    lines = [
        f"{name}: {bill.requests} requests, ${bill.dollars:.4f}; prefix {bill.first_prefix} "
        f"tokens a request, ${bill.prefix_dollars:.4f} over the run",
        f"  read {bill.read:,}, written {bill.written:,}, uncached {bill.uncached:,}, "
        f"output {bill.output:,} (${bill.output_dollars:.4f})",
    ]
    for category, share in sorted(bill.shares.items(), key=lambda item: -item[1].dollars):
        lines.append(
            f"  {category:22} {share.tokens:>10,} tokens: read {share.read:>10,}, written "
            f"{share.written:>8,}, uncached {share.uncached:>8,}; ${share.dollars:.4f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for name in argv:
        print(report(name, run_bill(Path(name).read_text().splitlines())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
