"""What a long session costs, strategy by strategy.

Each strategy replays the same workload (benchmarks/workload.py) through the real harness
(AgentSession with its tools, ledger and turn loop), the real SDKs and a fresh simulator over
HTTP, once through the Anthropic Messages API and once through OpenAI Chat Completions. The
bill comes from the simulator's request log (tokens per request, as the API answered them)
at the registry's list prices for BENCHMARK_CLAUDE_MODEL and BENCHMARK_GPT_MODEL.

Each strategy's cache efficiency is its perfect-cache bill over its real bill. The perfect-cache
bill (`lower_bound`) re-prices the strategy's own request stream with an ideal cache (no
expiry, no minimum size, no breakpoint limits, any earlier request's prefix reusable): the
tokens of request i that begin like an earlier request, up to the longest such prefix
(block-granular, as the simulator caches), at the cache-read price; the rest, new, once at the
cache-write price (OpenAI bills no writes: the input price); output at the output price. It
says how much a strategy loses to its cache misses, not whether its stream is a cheap one:
compare costs for that.

The workload's turns are separated by idle gaps (`Workload.idle_gaps`), three of them longer
than the 5-minute cache lifetime; the simulator's clock (`IdleClock`) jumps over them, and the
session reads the same clock (it knows when its cache went cold).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from agent_server.agent.context_manager import ContextPolicy
from agent_server.agent.model_call import RetryPolicy
from agent_server.agent.model_setup import connect
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.llm.cost import call_cost
from agent_server.llm.messages import AssistantMessage, ToolResultMessage
from agent_server.llm.models import (
    BENCHMARK_CLAUDE_MODEL,
    BENCHMARK_GPT_MODEL,
    BUILTIN_MODELS,
    ModelInfo,
    ModelRegistry,
    Pricing,
)
from agent_server.session.entries import MessageEntry
from agent_server.sim import anthropic_api, openai_chat
from agent_server.sim.cache import PromptBlock, cumulative_tokens, prefix_hashes
from agent_server.sim.records import RequestRecord
from agent_server.sim.request_checks import RequestCheck, check_requests, history_problems
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.tokenizer import count_tokens
from benchmarks.strategies import Strategy, strategies
from benchmarks.workload import SIZES, Workload, build_workload

Api = Literal["anthropic", "openai"]
APIS: tuple[Api, ...] = ("anthropic", "openai")
_REGISTRY = ModelRegistry(BUILTIN_MODELS)
# The agent's own retries are not what is measured; keep them short.
_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)


def price_model(api: Api) -> ModelInfo:
    return _REGISTRY.require(BENCHMARK_CLAUDE_MODEL if api == "anthropic" else BENCHMARK_GPT_MODEL)


# --- running one strategy -------------------------------------------------------------------


@dataclass
class RunLog:
    """One strategy's session on one API: the simulator's log and what the turns did."""

    strategy: str
    api: Api
    records: list[RequestRecord]
    stop_reasons: dict[str, int]
    tool_results: list[int]  # tokens of each tool output the session produced
    tool_errors: int
    output_tokens: int  # model output of the session's own calls (summaries aside)
    seconds: float


class IdleClock:
    """The simulator's clock: the wall clock plus the idle gaps the workload has passed, so
    that a pause longer than a cache's lifetime expires it without waiting."""

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        self._offset += seconds


def open_session(
    workspace: Path, settings: AgentSettings, policy: ContextPolicy | None,
    clock: Callable[[], float] = time.time,
) -> AgentSession:
    """A new session with `policy` plugged in, never sending a real key to the simulator;
    `clock` is the simulator's."""
    agent = WorkspaceAgent(
        workspace, settings, connect_to=lambda s: connect(s, env={}), retry=_RETRY,
        watch_files=False, clock=clock,
    )
    return agent.create(title="benchmark", policy=policy)


async def run_strategy(strategy: Strategy, workload: Workload, api: Api, root: Path) -> RunLog:
    """One session of `workload` under `strategy`. The run directory is the same path for
    every run (the workspace path is part of the system prompt), recreated each time."""
    run_dir = root / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    workspace = run_dir / "workspace"
    workload.write(workspace)
    scenario = parse_scenario(dict(workload.scenario), str(workload.scenario["name"]))
    clock = IdleClock()
    simulator = Simulator(scenario=scenario, clock=clock.now)
    started = time.perf_counter()
    stops: Counter[str] = Counter()
    async with SimServer(simulator) as server:
        settings = AgentSettings(
            provider="sim" if api == "anthropic" else "openai-chat",
            model=workload.size.model,
            base_url=server.base_url if api == "anthropic" else server.base_url + "/v1",
            cache_retention=strategy.cache_retention,
            compaction=strategy.compaction,
            permissions_mode="allowAll",
            sessions_dir=str(run_dir / "sessions"),
            tools=strategy.tools,
        )
        session = open_session(
            workspace, settings, strategy.policy() if strategy.policy else None, clock.now
        )
        try:
            gaps = workload.idle_gaps
            for index, prompt in enumerate(workload.prompts):
                clock.advance(gaps.get(index, 0.0))
                result = await session.run_turn(prompt)
                stops[result.stop_reason] += 1
        finally:
            entries = list(session.ledger.tree.entries)
            await session.close()
    seconds = time.perf_counter() - started
    results = [
        e.message
        for e in entries
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    ]
    output = sum(
        e.message.usage.output
        for e in entries
        if isinstance(e, MessageEntry)
        and isinstance(e.message, AssistantMessage)
        and e.message.usage is not None
    )
    return RunLog(
        strategy=strategy.name,
        api=api,
        records=list(simulator.records),
        stop_reasons=dict(stops),
        tool_results=[count_tokens(m.text) for m in results],
        tool_errors=sum(1 for m in results if m.is_error),
        output_tokens=output,
        seconds=seconds,
    )


# --- billing --------------------------------------------------------------------------------


@dataclass
class Bill:
    cost: float = 0.0
    cost_input: float = 0.0  # the parts of `cost`: uncached input, cache reads and writes,
    cost_cache_read: float = 0.0  # output
    cost_cache_write: float = 0.0
    cost_output: float = 0.0
    requests: int = 0  # answered model requests, summaries included
    summaries: int = 0
    failed: int = 0  # requests the API refused (e.g. prompt too long)
    truncated: int = 0  # answers cut off by the window or max_tokens
    off_script: int = 0  # answered by the simulator's fallback: the session left the script
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    peak: int = 0  # the largest prompt of the session's own calls (summary requests aside)

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write

    @property
    def cache_read_share(self) -> float:
        return self.cache_read / self.prompt if self.prompt else 0.0


def model_records(records: Iterable[RequestRecord]) -> list[RequestRecord]:
    return [
        r for r in records if r.api in ("anthropic-messages", "openai-chat", "openai-responses",
                                        "openai-responses-compact")
    ]


def bill(records: Iterable[RequestRecord], model: ModelInfo, *, uncached: bool = False) -> Bill:
    """The bill of a request log at `model`'s list prices. `uncached`: as if the provider
    cached nothing, every prompt token at the input price."""
    out = Bill()
    for record in model_records(records):
        tokens = record.tokens
        if record.status != 200 or tokens is None:
            out.failed += 1
            continue
        out.requests += 1
        out.summaries += record.source == "summary"
        out.off_script += (record.source or "").startswith("fallback")
        out.truncated += record.stop_reason in ("max_tokens", "model_context_window_exceeded")
        if record.source != "summary":
            out.peak = max(out.peak, tokens.prompt)
        out.output += tokens.output
        if uncached:
            out.input += tokens.prompt
            cost = call_cost(model.pricing, input=tokens.prompt, output=tokens.output)
        else:
            out.input += tokens.input
            out.cache_read += tokens.cache_read
            out.cache_write += tokens.cache_write
            cost = call_cost(
                model.pricing,
                input=tokens.input,
                output=tokens.output,
                cache_read=tokens.cache_read,
                cache_write_short=tokens.cache_write_5m,
                cache_write_long=tokens.cache_write_1h,
            )
        out.cost += cost.total
        out.cost_input += cost.input
        out.cost_cache_read += cost.cache_read
        out.cost_cache_write += cost.cache_write
        out.cost_output += cost.output
    return out


def _blocks(record: RequestRecord) -> tuple[PromptBlock, ...]:
    if record.api == "anthropic-messages":
        return anthropic_api.parse_request(record.request, _REGISTRY).blocks
    return openai_chat.parse_request(record.request, _REGISTRY).blocks


@dataclass
class LowerBound:
    cost: float = 0.0
    reread: int = 0  # tokens billed at the cache-read price
    new: int = 0  # tokens billed once at the write (or input) price
    output: int = 0


def lower_bound(records: Iterable[RequestRecord], model: ModelInfo) -> LowerBound:
    """The ideal-cache bill of a request stream (see the module's docstring)."""
    out = LowerBound()
    seen: set[str] = set()
    for record in model_records(records):
        tokens = record.tokens
        if record.status != 200 or tokens is None:
            continue
        blocks = _blocks(record)
        hashes = prefix_hashes(blocks, str(record.model))
        totals = cumulative_tokens(blocks)
        reread = 0
        for index in range(len(hashes) - 1, -1, -1):
            if hashes[index] in seen:
                reread = totals[index]
                break
        seen.update(hashes)
        reread = min(reread, tokens.prompt)
        new = tokens.prompt - reread
        rates = model.pricing.for_prompt(tokens.prompt)
        out.reread += reread
        out.new += new
        out.output += tokens.output
        out.cost += (
            reread * rates.cache_read + new * _write_price(rates) + tokens.output * rates.output
        ) / 1_000_000
    return out


def _write_price(rates: Pricing) -> float:
    return rates.cache_write_5m if rates.cache_write_5m > 0 else rates.input


# --- the benchmark --------------------------------------------------------------------------


@dataclass
class StrategyFigures:
    strategy: str
    label: str
    api: Api
    price_model: str
    cost: float
    cost_parts: dict[str, float]  # input, cacheRead, cacheWrite, output
    vs_default: float
    perfect_cache_cost: float  # the same requests with an ideal cache (lower_bound)
    cache_efficiency: float  # perfect_cache_cost / cost: 1.0 loses nothing to the cache
    cache_read_share: float
    calls: int  # the session's own model calls
    summaries: int
    peak_context: int
    failed: int
    truncated: int
    off_script: int
    invalid_histories: int  # requests with an orphaned tool result or broken roles
    failed_turns: int
    repriced: bool = False  # billed as if uncached (OpenAI caches by itself)
    seconds: float = 0.0


@dataclass
class ApiResult:
    """Every strategy on one API, and the default's lower bound and checks."""

    api: Api
    figures: list[StrategyFigures]
    lower_bound: dict[str, Any]
    default_check: dict[str, Any] | None
    workload: dict[str, Any]
    seconds: float


def invalid_histories(records: Iterable[RequestRecord]) -> int:
    count = 0
    for record in model_records(records):
        if record.api == "anthropic-messages" and isinstance(record.request, dict):
            count += bool(history_problems(record.request))
        elif record.status == 400 and "maximum context length" not in str(record.error):
            count += 1
    return count


def workload_stats(workload: Workload, default: RunLog) -> dict[str, Any]:
    sizes = sorted(default.tool_results)
    bill_ = bill(default.records, price_model(default.api))
    return {
        "size": workload.size.name,
        "model": workload.size.model,
        "turns": len(workload.prompts),
        "plannedCalls": workload.model_calls,
        "modelCalls": bill_.requests - bill_.summaries,
        "toolCalls": len(sizes),
        "toolOutputMedian": int(statistics.median(sizes)) if sizes else 0,
        "toolOutputP90": sizes[int(len(sizes) * 0.9)] if sizes else 0,
        "toolOutputMax": sizes[-1] if sizes else 0,
        "toolOutputsOver10k": sum(1 for s in sizes if s >= 10_000),
        "toolOutputTotal": sum(sizes),
        "toolErrors": default.tool_errors,
        "inputTokens": bill_.prompt,
        "outputTokens": bill_.output,
        "inputToOutput": bill_.prompt / bill_.output if bill_.output else 0.0,
    }


def figures_of(strategy: Strategy, log: RunLog, default: Bill) -> StrategyFigures:
    model = price_model(log.api)
    repriced = log.api == "openai" and strategy.cache_retention == "none"
    result = bill(log.records, model, uncached=repriced)
    perfect = lower_bound(log.records, model)
    failed_turns = sum(n for reason, n in log.stop_reasons.items() if reason != "end_turn")
    return StrategyFigures(
        strategy=strategy.name,
        label=strategy.label,
        api=log.api,
        price_model=model.id,
        cost=result.cost,
        cost_parts={
            "input": result.cost_input,
            "cacheRead": result.cost_cache_read,
            "cacheWrite": result.cost_cache_write,
            "output": result.cost_output,
        },
        vs_default=result.cost / default.cost if default.cost else 0.0,
        perfect_cache_cost=perfect.cost,
        cache_efficiency=perfect.cost / result.cost if result.cost else 0.0,
        cache_read_share=result.cache_read_share,
        calls=result.requests - result.summaries,
        summaries=result.summaries,
        peak_context=result.peak,
        failed=result.failed,
        truncated=result.truncated,
        off_script=result.off_script,
        invalid_histories=invalid_histories(log.records),
        failed_turns=failed_turns,
        repriced=repriced,
        seconds=round(log.seconds, 1),
    )


def check_summary(check: RequestCheck) -> dict[str, Any]:
    return {
        "ok": check.ok,
        "summary": check.summary(),
        "requests": check.requests,
        "summaryRequests": check.summary_requests,
        "windows": check.windows,
        "prefixChecks": check.prefix_checks,
        "violations": check.violations[:20],
    }


async def run_api(
    workload: Workload,
    api: Api,
    root: Path,
    *,
    only: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ApiResult:
    """Every strategy through one API. Each run's log is billed (and its perfect-cache bill
    computed) as soon as the run ends, then dropped."""
    started = time.perf_counter()
    chosen = [s for s in strategies() if only is None or s.name in only or s.name == "default"]
    model = price_model(api)
    figures: list[StrategyFigures] = []
    default_bill, bound = Bill(), LowerBound()
    check: dict[str, Any] | None = None
    stats: dict[str, Any] = {}
    for strategy in chosen:  # the default comes first
        if progress is not None:
            progress(f"cost: {strategy.name} via {api}")
        log = await run_strategy(strategy, workload, api, root)
        if strategy.name == "default":
            default_bill = bill(log.records, model)
            bound = lower_bound(log.records, model)
            stats = workload_stats(workload, log)
            if api == "anthropic":
                check = check_summary(check_requests(log.records))
        figures.append(figures_of(strategy, log, default_bill))
        del log
    return ApiResult(
        api=api,
        figures=figures,
        lower_bound={**asdict(bound), "priceModel": model.id},
        default_check=check,
        workload=stats,
        seconds=time.perf_counter() - started,
    )


def _run_api_in_process(
    size: str, api: Api, root: str, only: Sequence[str] | None
) -> ApiResult:
    """For a worker process: the workload is rebuilt (it is deterministic)."""

    def progress(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    workload = build_workload(SIZES[size])
    return asyncio.run(run_api(workload, api, Path(root), only=only, progress=progress))


def run(
    workload: Workload,
    root: Path,
    *,
    apis: Sequence[Api] = APIS,
    only: Sequence[str] | None = None,
    parallel: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[ApiResult]:
    """Every API's runs; with `parallel`, the OpenAI half runs in a second process (the two
    halves share nothing, and the machine has two cores)."""
    results: dict[Api, ApiResult] = {}
    first, *others = apis
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=max(1, len(others)), mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        futures = {
            api: pool.submit(
                _run_api_in_process, workload.size.name, api, str(root / api), only
            )
            for api in (others if parallel else ())
        }
        for api in (first, *([] if parallel else others)):
            results[api] = asyncio.run(
                run_api(workload, api, root / api, only=only, progress=progress)
            )
        for api, future in futures.items():
            results[api] = future.result()
    return [results[api] for api in apis]
