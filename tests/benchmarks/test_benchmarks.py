"""The benchmark's pieces on tiny sizes: structure and sanity, never timings."""

from __future__ import annotations

import io
import os
import random
import re
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_server.agent.context_manager import ContextManager, ContextView
from agent_server.agent.events import ignore_events
from agent_server.agent.session_config import FixedConfig
from agent_server.agent.tools import default_tools
from agent_server.cli import build_parser
from agent_server.context.summary_prompt import SUMMARY_REQUEST_MARKER
from agent_server.context.trigger import CompactionSettings
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agent_server.llm.models import BUILTIN_MODELS, ModelInfo
from agent_server.llm.stream import CacheUse
from agent_server.session.ledger import Ledger
from agent_server.sim.scenario import parse_scenario
from benchmarks import cost_bench, editor_bench, harness_bench, machine, peers, report
from benchmarks.strategies import (
    AUTOGPT_ANSWER_RESERVE,
    SWE_KEEP_OBSERVATIONS,
    AutoGptPolicy,
    MemGptPolicy,
    SweAgentPolicy,
    is_orphan_free,
    memgpt_flush_tokens,
    request_tokens,
)
from benchmarks.workload import FULL, TINY, build_workload

SIM_SMALL = next(m for m in BUILTIN_MODELS if m.id == "sim-small")
TOOLS = tuple(tool.spec for tool in default_tools())


# --- the workload ---------------------------------------------------------------------------


def test_the_workload_is_deterministic_and_a_valid_scenario() -> None:
    first, second = build_workload(TINY), build_workload(TINY)
    assert first.scenario == second.scenario
    assert first.files == second.files
    scenario = parse_scenario(dict(first.scenario))
    assert len(set(scenario.prompts)) == len(scenario.prompts) == TINY.turns


def test_the_full_workload_has_the_shape_the_issue_asks_for() -> None:
    workload = build_workload(FULL)
    assert workload.model_calls >= 200
    assert FULL.model == "sim-large"
    # A heavy tail: a few outputs planned at 10k+ tokens, most of them small.
    assert 5 <= workload.heavy_calls <= workload.tool_calls // 8


# --- the policies ---------------------------------------------------------------------------


def random_history(seed: int, steps: int) -> list[Message]:
    """Prompts and tool steps, some with parallel calls, some results large (~3k tokens)."""
    rng = random.Random(seed)
    history: list[Message] = []
    call_number = 0
    for turn in range(steps):
        if turn == 0 or rng.random() < 0.2:
            history.append(UserMessage.of_text(f"prompt {turn}"))
        calls = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            call_number += 1
            calls.append(ToolCall(f"call_{call_number}", "read", {"path": f"f{call_number}.py"}))
        history.append(
            AssistantMessage(
                (TextContent(f"step {turn}"), *calls),
                "toolUse",
                usage=Usage(input=10, output=10),
            )
        )
        for call in calls:
            size = rng.choice((200, 800, 3000, 12_000))
            history.append(
                ToolResultMessage(call.id, "read", (TextContent("line of output\n" * (size // 15)),))
            )
    return history


async def canned_summary(
    context: Context, model: ModelInfo, cache: CacheUse, max_tokens: int
) -> AssistantMessage:
    """The model call of the policies' ContextManager: every summary request (checked to be
    one) gets the same short answer."""
    assert SUMMARY_REQUEST_MARKER in context.messages[-1].content[0].text  # type: ignore[union-attr]
    return AssistantMessage((TextContent("a summary"),), "stop", usage=Usage(input=10, output=5))


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ContextManager]:
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never") as led:
        yield ContextManager(
            ledger=led,
            system_prompt="You are a coding agent.",
            tools=TOOLS,
            config=FixedConfig(SIM_SMALL, SIM_SMALL, CompactionSettings(enabled=False)),
            call=canned_summary,
            emit=ignore_events,
        )


def view_of(manager: ContextManager, messages: Sequence[Message]) -> ContextView:
    return manager.view_of(messages)


@pytest.mark.parametrize("policy_class", [SweAgentPolicy, AutoGptPolicy, MemGptPolicy])
@pytest.mark.parametrize("seed", range(6))
async def test_policies_never_send_an_orphaned_tool_result(
    policy_class: Any, seed: int, manager: ContextManager
) -> None:
    history = random_history(seed, 60)
    policy = policy_class()
    # Every prefix that ends where the harness calls the model: after a prompt or results.
    for end in range(1, len(history) + 1):
        if isinstance(history[end - 1], AssistantMessage):
            continue
        if end < len(history) and isinstance(history[end], ToolResultMessage):
            continue  # the step's results are appended together
        sent = (await policy.prepare(view_of(manager, history[:end]), manager)).messages
        assert isinstance(sent[0], UserMessage), "a request opens with the user"
        assert is_orphan_free(sent)
        assert not any(
            isinstance(a, UserMessage) and isinstance(b, UserMessage) for a, b in pairwise(sent)
        )


async def test_swe_agent_collapses_all_but_the_first_and_the_last_five_outputs(
    manager: ContextManager,
) -> None:
    history = random_history(1, 20)
    sent = (await SweAgentPolicy().prepare(view_of(manager, history), manager)).messages
    results = [m for m in sent if isinstance(m, ToolResultMessage)]
    stubs = [m for m in results if re.fullmatch(r"Old environment output: \(\d+ lines omitted\)",
                                                m.text)]
    assert len(stubs) == len(results) - SWE_KEEP_OBSERVATIONS - 1
    assert results[0] not in stubs  # SWE-agent never removes the first observation
    assert all(m not in stubs for m in results[-SWE_KEEP_OBSERVATIONS:])


@pytest.mark.parametrize("polling", [1, 5, 10])
async def test_swe_agent_polling_moves_the_cut_only_every_polling_outputs(
    polling: int, manager: ContextManager
) -> None:
    history = random_history(3, 40)
    policy = SweAgentPolicy(polling=polling)
    kept_counts = set()
    previous: tuple[Message, ...] | None = None
    changes = 0
    for end in range(1, len(history) + 1):
        if isinstance(history[end - 1], AssistantMessage) or (
            end < len(history) and isinstance(history[end], ToolResultMessage)
        ):
            continue
        sent = (await policy.prepare(view_of(manager, history[:end]), manager)).messages
        results = [m for m in sent if isinstance(m, ToolResultMessage)]
        full = [m for m in results if not m.text.startswith("Old environment output")]
        if len(results) > SWE_KEEP_OBSERVATIONS + polling:
            kept_counts.add(len(full) - 1)  # the first one aside
        if previous is not None and sent[: len(previous)] != previous:
            changes += 1  # an earlier message was rewritten: the cached prefix is lost
        previous = sent
    # Between n and n + polling outputs kept whole, as SWE-agent's docstring says.
    assert kept_counts and min(kept_counts) >= SWE_KEEP_OBSERVATIONS
    assert max(kept_counts) < SWE_KEEP_OBSERVATIONS + polling + 3  # a step's parallel results
    results_total = sum(isinstance(m, ToolResultMessage) for m in history)
    assert changes <= results_total // polling + 1


async def test_memgpt_evicts_about_half_the_window_when_full(manager: ContextManager) -> None:
    history = random_history(2, 80)
    memgpt = MemGptPolicy()
    view = view_of(manager, history)
    assert request_tokens(view, history) > SIM_SMALL.context_window  # it has to evict
    sent = (await memgpt.prepare(view, manager)).messages
    assert request_tokens(view, sent) <= memgpt_flush_tokens(SIM_SMALL)
    assert memgpt.summary is not None and memgpt.kept_from > 0
    # Below the flush count nothing is evicted.
    short = history[:4]
    assert (await MemGptPolicy().prepare(view_of(manager, short), manager)).messages == tuple(
        short
    )


async def test_autogpt_keeps_what_fits_its_budget_and_summarises_the_rest(
    manager: ContextManager,
) -> None:
    history = random_history(2, 80)
    autogpt = AutoGptPolicy()
    view = view_of(manager, history)
    sent = (await autogpt.prepare(view, manager)).messages
    assert autogpt.summary is not None
    budget = SIM_SMALL.context_window - AUTOGPT_ANSWER_RESERVE
    assert request_tokens(view, sent) <= budget
    assert len(sent) >= 4
    head = sent[0]
    assert isinstance(head, UserMessage) and isinstance(head.content[0], TextContent)
    assert head.content[0].text.startswith("This reminds you of these events from your past:")
    # As many recent messages as fit: the message before the kept ones would not have.
    kept = sent[1:] if len(head.content) == 1 else sent
    start = len(history) - len(kept)
    assert start == autogpt.summarised_upto
    wider = (history[start - 1], *kept) if start > 0 else kept
    assert request_tokens(view, wider) > budget - 50 or isinstance(history[start - 1],
                                                                    ToolResultMessage)


# --- the cost benchmark ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_anthropic(tmp_path_factory: pytest.TempPathFactory) -> cost_bench.ApiResult:
    import asyncio

    workload = build_workload(TINY)
    root = tmp_path_factory.mktemp("cost")
    return asyncio.run(cost_bench.run_api(workload, "anthropic", root))


def test_the_default_log_keeps_every_invariant(tiny_anthropic: cost_bench.ApiResult) -> None:
    check = tiny_anthropic.default_check
    assert check is not None
    assert check["ok"], check["violations"]
    assert check["requests"] >= TINY.turns
    assert check["windows"] >= 2, "the tiny workload compacts at least once"


def test_every_strategy_ran_the_whole_workload_with_valid_requests(
    tiny_anthropic: cost_bench.ApiResult,
) -> None:
    figures = {f.strategy: f for f in tiny_anthropic.figures}
    assert set(figures) == {
        "default", "fresh-summary", "near-window", "threshold-64k", "no-cache", "auto-retention", "swe-agent", "swe-agent-p5",
        "swe-agent-p10", "autogpt", "memgpt", "restore-files", "repo-map-tool", "repo-map-tool-4k",
        "aider-map",
        "aider-map-files",
    }  # fmt: skip
    workload = tiny_anthropic.workload
    for f in figures.values():
        assert f.invalid_histories == 0, f.strategy
        assert f.failed == 0 and f.failed_turns == 0, f.strategy
        assert f.calls >= workload["plannedCalls"] - 1, f.strategy
        assert f.cost > 0
    assert figures["no-cache"].cache_read_share == 0.0
    assert figures["default"].cache_read_share > 0.5
    assert figures["autogpt"].summaries > 0
    model = next(m for m in BUILTIN_MODELS if m.id == TINY.model)
    assert figures["autogpt"].peak_context <= model.context_window - AUTOGPT_ANSWER_RESERVE
    assert figures["swe-agent"].summaries == 0
    # The seed's claim: a map at the head that changes each call costs the cache its reads.
    assert figures["aider-map"].cache_read_share < figures["default"].cache_read_share


def test_each_strategys_perfect_cache_bill_is_below_its_bill(
    tiny_anthropic: cost_bench.ApiResult,
) -> None:
    bound = tiny_anthropic.lower_bound
    assert bound["new"] > 0 and bound["reread"] > 0
    for f in tiny_anthropic.figures:
        assert 0 < f.perfect_cache_cost <= f.cost * 1.001, f.strategy
        assert 0 < f.cache_efficiency <= 1.001, f.strategy
    figures = {f.strategy: f for f in tiny_anthropic.figures}
    assert figures["no-cache"].cache_efficiency < 0.5  # it pays full price for every re-read
    figures = {f.strategy: f for f in tiny_anthropic.figures}
    assert figures["no-cache"].vs_default > 2


async def test_the_openai_bill_reprices_no_cache_as_uncached(tmp_path: Path) -> None:
    workload = build_workload(TINY)
    result = await cost_bench.run_api(workload, "openai", tmp_path, only=["no-cache"])
    default, no_cache = result.figures
    assert (default.strategy, no_cache.strategy) == ("default", "no-cache")
    assert default.price_model == "gpt-5.5"
    assert no_cache.repriced and no_cache.cache_read_share == 0.0
    assert default.cache_read_share > 0.5  # OpenAI caches by itself
    assert no_cache.cost > default.cost
    assert result.default_check is None


# --- the harness and the editor path --------------------------------------------------------


def test_the_harness_is_measured_at_a_size(tmp_path: Path) -> None:
    built = harness_bench.build_ledger(tmp_path, 400)
    row = harness_bench.measure_size(built, repeat=5)
    assert row["entries"] >= 400
    assert row["context_messages"] > 10
    for key in ("prepare_ms", "build_ms", "snapshot_ms", "append_ms", "sdk_ms", "open_ms"):
        assert row[key] > 0, key
    assert row["harness_ms"] >= row["prepare_ms"] + row["build_ms"]
    assert row["rss_mb"] > row["rss_before_mb"] > 0


async def test_the_editor_path_delivers_every_chunk() -> None:
    result = await editor_bench.measure(probes=3, long_tokens=400)
    assert result["updates"] >= 1  # chunks that leave the server in one write are merged
    assert result["streamed_characters"] >= 400  # every token's text (at least a character)
    assert result["updates_per_second"] > 0
    assert 0 < result["latency_ms_median"] < 10_000


# --- the report and the command -------------------------------------------------------------


def test_the_report_prints_every_table_and_checks_the_goals(
    tiny_anthropic: cost_bench.ApiResult,
) -> None:
    row = {
        "entries": 100, "file_mb": 0.1, "context_tokens": 1000, "prepare_ms": 0.2,
        "build_ms": 0.2, "snapshot_ms": 0.2, "append_ms": 0.1, "harness_ms": 0.7,
        "sdk_ms": 1.0, "vs_sdk": 0.7, "open_ms": 20.0, "rss_mb": 100.0,
    }  # fmt: skip
    result: dict[str, Any] = {
        "quick": True,
        "meta": machine(),
        "cost": {
            "workload": tiny_anthropic.workload,
            "apis": [
                {
                    "api": "anthropic",
                    "strategies": [vars(f) for f in tiny_anthropic.figures],
                    "lowerBound": tiny_anthropic.lower_bound,
                }
            ],
            "defaultCheck": tiny_anthropic.default_check,
            "seconds": 1.0,
        },
        "harness": {
            "rows": [row, {**row, "entries": 10_000, "harness_ms": 2.1, "vs_sdk": 2.1}],
            "sizes": [100, 10_000],
            "seconds": 1.0,
        },
        "editor": {
            "probes": 3,
            "latency_ms_cold": 20.0,
            "latency_ms_median": 1.0,
            "latency_ms_p90": 2.0,
            "updates": 100,
            "updates_per_second": 5000.0,
            "long_answer_tokens": 800,
            "seconds": 1.0,
        },
        "seconds": 3.0,
    }
    result["goals"] = report.goals(result)
    goals = {g["goal"]: g["met"] for g in result["goals"]}
    figures = {g["goal"]: g["figure"] for g in result["goals"]}
    # Idle gaps past the cache lifetime cost re-writes that a perfect cache never pays.
    perfect = figures["default within 1.10x of its perfect-cache bill (claude-haiku-4-5)"]
    assert float(perfect.removesuffix("x")) >= 1.0
    assert not goals["harness time per turn at 10,000 entries at most 2x that at 100"]
    out = io.StringIO()
    report.print_report(result, Console(file=out, width=160))
    text = out.getvalue()
    for title in ("workload", "cost of the session", "the harness at scale", "goals"):
        assert title in text


def test_the_command_line_has_a_bench_subcommand() -> None:
    args = build_parser().parse_args(["bench", "--quick", "--json", "out.json"])
    assert (args.command, args.quick, args.json) == ("bench", True, "out.json")


def test_bench_outside_a_checkout_says_where_to_run_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_server import cli

    monkeypatch.setattr(cli, "__file__", str(tmp_path / "agent_server" / "cli.py"))
    assert cli.run_bench(quick=True, json_path=None) == 2
    assert "source checkout" in capsys.readouterr().err


# --- the peer benchmark (the pieces that need no npm) -----------------------------------------


def test_each_peer_continues_its_own_session() -> None:
    model = next(m for m in BUILTIN_MODELS if m.id == "sim-small")
    exe = Path("/x/bin/tool")
    commands = {
        peer.name: (peers.turn_command(peer, exe, model, "hello", True, "sid"),
                    peers.turn_command(peer, exe, model, "again", False, "sid"))
        for peer in peers.PEERS if peer.name != "pi"
    }
    # pi keeps one process for the session (benchmarks/pi_rpc.py)
    assert peers.pi_command(exe, ["--provider", "sim"]) == [
        "/x/bin/tool", "--provider", "sim", "--mode", "rpc"]
    first, later = commands["claude-code"]
    assert first[first.index("--session-id") + 1] == "sid"
    assert later[later.index("--resume") + 1] == "sid"
    first, later = commands["codex"]
    assert first[1:2] == ["exec"] and later[1:4] == ["exec", "resume", "--last"]
    assert first[-1] == "hello" and later[-1] == "again"


async def test_the_peer_figures_come_from_the_request_log(tmp_path: Path) -> None:
    run = await peers._run_agent_server("agent-server-anthropic", "sim-large", tmp_path,
                                        tmp_path / "scratch")
    figures = peers.figures(run)
    assert figures.failed_turns == 0 and figures.failed_requests == 0
    assert figures.requests == 65  # the default scenario's planned calls
    assert figures.tool_results == 50
    assert figures.tool_result_tokens > 10_000
    assert 1000 < figures.fixed_prefix < 5000
    assert 0.5 < figures.cache_read_share < 1 and figures.cost > 0
    peers.write_tool_results(run, tmp_path)
    lines = (tmp_path / "agent-server-anthropic-sim-large.tool-results.jsonl").read_text()
    assert len(lines.splitlines()) == 50
    assert (tmp_path / "agent-server-anthropic-sim-large.jsonl").stat().st_size > 0


def test_the_peer_command_refuses_unknown_clients_and_models(tmp_path: Path) -> None:
    assert peers.main(clients=["nobody"], out_dir=tmp_path) == 2
    assert peers.main(clients=["agent-server"], models=["sim-huge"], out_dir=tmp_path) == 2
    args = build_parser().parse_args(["bench", "peers", "--clients", "pi,codex"])
    assert args.suite == "peers" and args.clients == "pi,codex"


def test_lines_carried_compares_content_whatever_form_each_tool_prints_it_in() -> None:
    def result(tool: str, text: str) -> peers.ToolResultLine:
        return peers.ToolResultLine("id", tool, {}, 0, False, text)

    ws = "/root/.cache/agent-server/peer-runs/x/workspaces/pi-sim-large"
    theirs = [
        result("bash", "total 8\ndrwxr-xr-x 2 root root 4096 Dec  3 07:55 .\n"
                       "drwxr-xr-x 2 root root 4096 Dec  3 07:55 data\n"
                       "-rw-r--r-- 1 root root  436 Dec  3 07:55 pyproject.toml\n"),
        result("Read", "1\t[project]\n2\tname = 'x'\n3\t"),
        result("bash", "Chunk ID: 1a\nWall time: 0.1 seconds\nProcess exited with code 0\n"
                       "Output:\n     7\t    return 1\n"),
        result("bash", f"{ws}/src/a.py:3:def main():\nsrc/b.py:9:    raise Gone\n"),
        result("bash", "4:2024-05-06 08:11:53 ERROR cli: boom\n"),
        result("read", "line\n\n[2361 more lines in file. Use offset=251 to continue.]"),
        result("bash", "21 passed in 0.62s"),
        result("edit", "Successfully replaced 1 block(s) in notes.md."),
        result("bash", "a line only the peer has"),
        result("bash", "25:    raise Again\n116:    raise Again\n"),
    ]
    ours = [
        result("ls", "data/\npyproject.toml"),
        result("read", "[project]\nname = 'x'\n    return 1\nline\n\n[Showing lines 1-250 of 2611. "
                       "Continue with offset=251.]"),
        result("grep", "src/a.py\n3:def main():\n\nsrc/b.py\n9:    raise Gone"),
        result("grep", "4:2024-05-06 08:11:53 ERROR cli: boom"),
        result("bash", "21 passed in 0.71s"),
        result("grep", "25,116:    raise Again\n[lines 9-14 repeat lines 2-7 above]"),
    ]
    carried = peers.carried_lines(theirs, ours)
    assert carried.missing == ["a line only the peer has"]
    assert carried.total == 13 and carried.carried == 12
    assert peers.reference_client("codex") == "agent-server"
    assert peers.reference_client("pi") == "agent-server-anthropic"


# --- long sessions ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_long_session_bench_opens_loads_and_pages_a_small_session(tmp_path: Path) -> None:
    from benchmarks import long_session_bench

    built = long_session_bench.build(tmp_path / "ledger", 400)
    assert built["entries"] == 400
    assert long_session_bench.build(tmp_path / "ledger", 400) == built  # reused
    opened = long_session_bench.in_fresh_process("open", built)
    assert opened["context_tokens"] > 0
    assert opened["mb_per_turn"] is None  # the turns run only on a copy
    opened["mb_per_turn"] = 0.001
    assert opened["seconds"] > 0
    load = long_session_bench.lsp_load(built)
    assert load["items"] > 0
    assert load["history_pages"] >= 1  # 400 entries do not fit the first page
    assert load["history_items"] > load["items"]
    notify = long_session_bench.in_fresh_process("notify:server:200", built)
    assert notify["count"] == 200
    fake = {
        "entries": 400,
        "file_mb": built["file_mb"],
        "open_first": opened,
        "open": opened,
        "read_all": {"seconds": 0.1, "peak_above_idle_mb": 1.0, "lines": 401},
        "pi_open": None,
        "load": load,
        "notify": notify,
        "notify_pygls": notify,
        "stream": {
            "turns": 1,
            "updates": 10,
            "per_second": 90.0,
            "cpu_us_per_delta": 50.0,
            "deltas_per_cpu_second": 2e4,
        },
        "cold_start": {"median_s": 0.4, "min_s": 0.3, "cpu_median_s": 0.3, "python_median_s": 0.02},
    }
    text = long_session_bench.format_report(fake)
    assert "400 entries" in text and "pi: not installed" in text
    fake["open"] = {**opened, "mb_per_turn": None}
    assert "not measured" in long_session_bench.format_report(fake)
    goals = long_session_bench.goals(fake)
    assert [g["met"] for g in goals][3] is True


def test_agent_servers_commands_see_the_environment_the_peers_commands_see(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """agent-server runs in the benchmark's process: its commands must not see the shell's
    terminal (a width, colours) nor miss `CI`, which the peers' commands get (pytest prints
    failed assertions whole under it)."""
    monkeypatch.setenv("COLUMNS", "213")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("CI", raising=False)
    peer = peers._clean_env(Path("/home"), {"EXTRA": "x"})
    with peers._environment({"EXTRA": "x"}):
        ours = dict(os.environ)
        for name in ("CI", "LANG", "TERM", "NO_COLOR", "EXTRA", *peers.NOT_IN_COMMAND_ENV):
            assert ours.get(name) == peer.get(name), name
    assert os.environ["COLUMNS"] == "213" and "CI" not in os.environ  # given back
