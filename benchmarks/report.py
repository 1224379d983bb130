"""The benchmark's tables (rich) and the goals checked against its figures (issue 45's over
the recall benchmark's runs: benchmarks/recall_goal.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

GOAL_LOWER_BOUND = 1.10  # the default within 1.10x of its own perfect-cache bill
GOAL_VS_COLLAPSING = 0.5  # at most half the cost of observation collapsing
GOAL_SCALE = 2.0  # harness time per turn at the largest size at most 2x that at 100 entries

API_TITLES = {
    "anthropic": "Anthropic Messages API (through the anthropic SDK)",
    "openai": "OpenAI Chat Completions (through the openai SDK)",
}


def format_tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1e6:.2f}M"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def _money(value: float) -> str:
    return f"${value:,.2f}" if value >= 10 else f"${value:.4f}" if value < 0.1 else f"${value:.3f}"


def _ratio(value: float) -> str:
    return f"{value:.2f}x"


def workload_table(stats: Mapping[str, Any]) -> Table:
    table = Table(title="workload", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("size / simulated model", f"{stats['size']} / {stats['model']}")
    table.add_row(
        "turns, model calls (planned)",
        f"{stats['turns']}, {stats['modelCalls']} ({stats['plannedCalls']})",
    )
    table.add_row(
        "tool outputs (tokens)",
        f"{stats['toolCalls']} outputs: median {stats['toolOutputMedian']:,}, "
        f"p90 {stats['toolOutputP90']:,}, max {stats['toolOutputMax']:,}; "
        f"{stats['toolOutputsOver10k']} of 10k+; total {format_tokens(stats['toolOutputTotal'])}",
    )
    table.add_row(
        "input : output (default)",
        f"{format_tokens(stats['inputTokens'])} : {format_tokens(stats['outputTokens'])} = "
        f"{stats['inputToOutput']:.0f} : 1",
    )
    table.add_row("tool errors", str(stats["toolErrors"]))
    return table


def cost_table(api_result: Mapping[str, Any]) -> Table:
    figures = api_result["strategies"]
    model = figures[0]["price_model"]
    table = Table(
        title=f"cost of the session at {model} list prices — {API_TITLES[api_result['api']]}",
        title_justify="left",
    )
    for name, justify in (
        ("strategy", "left"),
        ("cost", "right"),
        ("× default", "right"),
        ("cache efficiency", "right"),
        ("cache-read share", "right"),
        ("summaries", "right"),
        ("peak context", "right"),
        ("failed requests", "right"),
        ("notes", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for f in figures:
        notes = []
        if f["repriced"]:
            notes.append("re-priced uncached")
        if f["failed_turns"]:
            notes.append(f"{f['failed_turns']} turns failed")
        if f["off_script"]:
            notes.append(f"{f['off_script']} off-script calls")
        if f["truncated"]:
            notes.append(f"{f['truncated']} answers cut off")
        if f["invalid_histories"]:
            notes.append(f"{f['invalid_histories']} invalid histories")
        table.add_row(
            f["strategy"],
            _money(f["cost"]),
            _ratio(f["vs_default"]),
            f"{f['cache_efficiency']:.1%}",
            f"{f['cache_read_share']:.1%}",
            str(f["summaries"]),
            format_tokens(f["peak_context"]),
            str(f["failed"]),
            ", ".join(notes),
        )
    return table


def cost_parts_line(api_result: Mapping[str, Any]) -> str:
    """Where the default's money goes, and what its perfect-cache bill is made of."""
    default = api_result["strategies"][0]
    parts = default["cost_parts"]
    bound = api_result["lowerBound"]
    return (
        f"the default's bill: cache reads {_money(parts['cacheRead'])}, cache writes "
        f"{_money(parts['cacheWrite'])}, uncached input {_money(parts['input'])}, output "
        f"{_money(parts['output'])}. Its perfect-cache bill ({_money(bound['cost'])}): "
        f"{format_tokens(bound['reread'])} tokens re-read, {format_tokens(bound['new'])} new, "
        f"{format_tokens(bound['output'])} output. Cache efficiency = perfect-cache bill / "
        "bill, each strategy against its own requests."
    )


def scale_table(harness: Mapping[str, Any]) -> Table:
    table = Table(
        title="the harness at scale (per turn: medians; ms)",
        title_justify="left",
    )
    columns = (
        ("ledger entries", "entries", "{:,}"),
        ("file MB", "file_mb", "{:.1f}"),
        ("context", "context_tokens", None),
        ("prepare", "prepare_ms", "{:.2f}"),
        ("build request", "build_ms", "{:.2f}"),
        ("usage snapshot", "snapshot_ms", "{:.2f}"),
        ("appends", "append_ms", "{:.2f}"),
        ("harness / turn", "harness_ms", "{:.2f}"),
        ("SDK serialise", "sdk_ms", "{:.2f}"),
        ("× SDK", "vs_sdk", "{:.2f}x"),
        ("open", "open_ms", "{:,.0f}"),
        ("RSS MB", "rss_mb", "{:.0f}"),
    )
    for title, _key, _fmt in columns:
        table.add_column(title, justify="right")
    for row in harness["rows"]:
        cells = []
        for _title, key, fmt in columns:
            value = row[key]
            cells.append(format_tokens(value) if fmt is None else fmt.format(value))
        table.add_row(*cells)
    return table


def editor_table(editor: Mapping[str, Any]) -> Table:
    table = Table(title="the editor path (agent-server serve on stdio)", title_justify="left",
                  show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row(
        "agent/update notifications per second",
        f"{editor['updates_per_second']:,.0f} ({editor['updates']:,} updates, "
        f"{format_tokens(editor['long_answer_tokens'])}-token answer, "
        f"stop: {editor.get('long_turn_stop', '?')})",
    )
    table.add_row(
        "simulator's first text byte -> client's first chunk",
        f"median {editor['latency_ms_median']:.1f} ms, p90 {editor['latency_ms_p90']:.1f} ms "
        f"({editor['probes'] - 1} warm turns)",
    )
    table.add_row("the same, first turn of the server", f"{editor['latency_ms_cold']:.1f} ms")
    return table


def goals(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each goal with its figure and whether it is met."""
    out: list[dict[str, Any]] = []
    for api_result in result["cost"]["apis"]:
        figures = {f["strategy"]: f for f in api_result["strategies"]}
        default = figures["default"]
        model = default["price_model"]
        efficiency = default["cache_efficiency"]
        ratio = 1 / efficiency if efficiency else 0.0
        out.append(
            {
                "goal": (
                    f"default within {GOAL_LOWER_BOUND:.2f}x of its perfect-cache bill ({model})"
                ),
                "figure": _ratio(ratio),
                "met": 0 < ratio <= GOAL_LOWER_BOUND,
            }
        )
        # Observation collapsing at its best polling setting, the fairest comparison.
        swe = [f for name, f in figures.items() if name.startswith("swe-agent") and f["cost"]]
        if swe:
            cheapest = min(swe, key=lambda f: f["cost"])
            share = default["cost"] / cheapest["cost"]
            out.append(
                {
                    "goal": (
                        "default at most half the cost of observation collapsing at its best "
                        f"polling ({cheapest['strategy']}, {model})"
                    ),
                    "figure": f"{share:.2f} of it",
                    "met": share <= GOAL_VS_COLLAPSING,
                }
            )
    rows = [r for r in result["harness"]["rows"] if r["entries"] in result["harness"]["sizes"]]
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        absolute = last["harness_ms"] / first["harness_ms"] if first["harness_ms"] else 0.0
        # Each size runs in its own process at its own moment; the SDK's serialisation of
        # the same request, timed alongside, is the baseline that cancels the machine's noise.
        normalised = last["vs_sdk"] / first["vs_sdk"] if first["vs_sdk"] else 0.0
        out.append(
            {
                "goal": (
                    f"harness time per turn at {last['entries']:,} entries at most "
                    f"{GOAL_SCALE:.0f}x that at {first['entries']:,}"
                ),
                "figure": (
                    f"{normalised:.2f}x against the SDK baseline "
                    f"({last['harness_ms']:.2f} vs {first['harness_ms']:.2f} ms: {absolute:.2f}x)"
                ),
                "met": normalised <= GOAL_SCALE,
            }
        )
    limit = 60 if result["quick"] else 600
    out.append(
        {
            "goal": f"{'--quick' if result['quick'] else 'the full run'} under {limit // 60} min",
            "figure": f"{result['seconds']:.0f} s",
            "met": result["seconds"] <= limit,
        }
    )
    return out


def goals_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(title="goals", title_justify="left")
    table.add_column("goal")
    table.add_column("figure", justify="right")
    table.add_column("met")
    for row in rows:
        table.add_row(row["goal"], row["figure"], "yes" if row["met"] else "[bold]NO[/bold]")
    return table


def print_report(result: Mapping[str, Any], console: Console) -> None:
    meta = result["meta"]
    console.rule("[bold]agent-server bench" + (" --quick" if result["quick"] else ""))
    console.print(
        f"{meta['cpu']} · {meta['cpus']} CPUs · {meta['memory_gb']:.0f} GB · Python "
        f"{meta['python']} · anthropic {meta['anthropic']} · openai {meta['openai']} · "
        f"{meta['revision']}"
    )
    cost = result["cost"]
    console.print(workload_table(cost["workload"]))
    for api_result in cost["apis"]:
        console.print(cost_table(api_result))
        console.print(cost_parts_line(api_result))
    check = cost["defaultCheck"]
    if check is not None:
        console.print(f"check_requests on the default's log: {check['summary']}")
    console.print(scale_table(result["harness"]))
    console.print(editor_table(result["editor"]))
    if "longSessions" in result:
        from benchmarks.long_session_bench import format_report

        console.print(format_report(result["longSessions"]), markup=False)
    console.print(goals_table(result["goals"]))
    console.print(
        f"cost {cost['seconds']:.0f} s · harness {result['harness']['seconds']:.0f} s · "
        f"editor {result['editor']['seconds']:.0f} s · "
        f"long sessions {result.get('longSessions', {}).get('seconds', 0):.0f} s · "
        f"total {result['seconds']:.0f} s"
    )


def peers_table(rows: Sequence[Any]) -> Table:
    """The peer benchmark: one column per client and model, one row per figure."""
    table = Table(title="the same 18-turn session, client by client (simulated models, "
                        "Sonnet-class list prices)")
    table.add_column("")
    for row in rows:
        table.add_column(f"{row.client}\n{row.model}", justify="right")
    cheapest, same_api = versus_cheapest_peer(rows, lambda r: (r.model,))

    def carried(row: Any) -> str:
        lines = row.lines_carried
        if lines is None:
            return "-"
        return f"{lines.share:.1%} ({lines.carried:,} of {lines.total:,})"

    lines: list[tuple[str, Any]] = [
        ("version", lambda r: r.version),
        ("requests", lambda r: f"{r.requests:,}"),
        ("billed cost", lambda r: _money(r.cost)),
        ("× cheapest peer (all turns done)", cheapest),
        ("× cheapest peer on the same API", same_api),
        ("peer's tool-result lines ours carry", carried),
        ("cache-read share", lambda r: f"{r.cache_read_share:.1%}"),
        ("cache writes (tokens)", lambda r: format_tokens(r.cache_write)),
        ("fixed prefix (system + tools)", lambda r: format_tokens(r.fixed_prefix)),
        ("tool results", lambda r: f"{r.tool_results:,}"),
        ("tool-result tokens", lambda r: format_tokens(r.tool_result_tokens)),
        ("summaries", lambda r: f"{r.summaries}"),
        ("failed requests", lambda r: f"{r.failed_requests}"),
        ("failed turns", lambda r: f"{r.failed_turns} of {r.turns}"),
        ("off-script answers", lambda r: f"{r.off_script}"),
        *recall_lines(),
        ("wall time", lambda r: f"{r.seconds:.0f} s"),
    ]
    for label, value in lines:
        table.add_row(label, *(str(value(row)) for row in rows))
    return table


def _violations(row: Any) -> str:
    v = row.recall.violations
    return " / ".join(str(v.get(kind, 0)) for kind in ("rule", "request", "decision", "failed",
                                                        "lost"))


def recall_lines() -> list[tuple[str, Any]]:
    """What the model needed to know and what forgetting cost (peers.Recall), as rows."""
    return [
        ("facts needed / found", lambda r: f"{r.recall.needed} / {r.recall.found}"),
        ("recoveries: calls, tokens, $",
         lambda r: f"{r.recall.recoveries}, {format_tokens(r.recall.recovery_tokens)}, "
                   f"{_money(r.recall.recovery_cost)}"),
        ("violations: rule / request / decision / failed / lost", _violations),
        ("reads on past a cut", lambda r: f"{r.recall.reads_on}"),
        ("compactions", lambda r: f"{r.summaries}"),
        ("completed steps", lambda r: f"{r.recall.completed}"),
        ("bill per completed step", lambda r: _money(r.cost_per_step)),
    ]


def versus_cheapest_peer(rows: Sequence[Any], run: Callable[[Any], tuple[str, ...]]
                         ) -> tuple[Callable[[Any], str], Callable[[Any], str]]:
    """Two cells for a row: its bill over the cheapest peer's (of those that finished every
    turn) in the same run (`run`: the row's session, window, ...), and over the cheapest
    peer's on the row's own API (agent-server's rows only)."""
    from benchmarks.peers import api_of

    cheapest: dict[tuple[str, ...], float] = {}
    same_api: dict[tuple[tuple[str, ...], str], float] = {}
    for row in rows:
        if not row.client.startswith("agent-server") and row.failed_turns == 0:
            cheapest[run(row)] = min(cheapest.get(run(row), row.cost), row.cost)
            key = (run(row), api_of(row.client))
            same_api[key] = min(same_api.get(key, row.cost), row.cost)

    def ratio(reference: float | None, cost: float) -> str:
        return _ratio(cost / reference) if reference else "-"

    def versus_same_api(row: Any) -> str:
        if not row.client.startswith("agent-server"):
            return "-"
        return ratio(same_api.get((run(row), api_of(row.client))), row.cost)

    return (lambda r: ratio(cheapest.get(run(r)), r.cost), versus_same_api)


def recall_table(rows: Sequence[Any]) -> Table:
    """The recall benchmark: one row per run (session, window, summariser, client), with the
    recall columns `bench peers` shows too (`recall_lines`)."""
    cheapest, same_api = versus_cheapest_peer(
        rows, lambda r: (r.session, r.model, r.summariser))
    columns: list[tuple[str, Any]] = [
        ("session", lambda r: r.session), ("window", lambda r: r.model),
        ("summariser", lambda r: r.summariser), ("client", _client),
        ("bill", lambda r: _money(r.cost)),
        ("× cheapest peer", cheapest),
        ("× cheapest peer, same API", same_api),
        ("cache read", lambda r: f"{r.cache_read_share:.0%}"),
        *recall_lines(),
        ("exploring calls (maps): before / after 1st compaction", _exploring),
        ("exploring steps skipped", lambda r: " / ".join(map(str, r.exploration.skipped))),
        ("failed turns", lambda r: f"{r.failed_turns} of {r.turns}"),
    ]
    table = Table(title="the real-code suite, client by client: what forgetting costs "
                        "(simulated models, Sonnet-class list prices)")
    for index, (heading, _value) in enumerate(columns):
        table.add_column(heading, justify="left" if index < 4 else "right",
                         no_wrap=index < 4)
    for row in rows:
        table.add_row(*(str(value(row)) for _heading, value in columns))
    return table


def _client(row: Any) -> str:
    """The client, with agent-server's strategy when it is not the default."""
    strategy = getattr(row, "strategy", "default")
    return row.client if strategy == "default" else f"{row.client} ({strategy})"


def _exploring(row: Any) -> str:
    calls, maps = row.exploration.calls, row.exploration.maps
    return f"{calls[0]} ({maps[0]}) / {calls[1]} ({maps[1]})"


def head_table(rows: Sequence[Any]) -> Table:
    """The prompt's head request by request: how often it changed, and what the requests
    read from the cache when it did and when it did not (the seed's claim about a map at the
    head)."""
    table = Table(title="the head of the prompt: requests whose first message changed, and "
                        "their cache reads")
    for heading in ("session", "window", "summariser", "client", "requests", "head changed",
                    "read when changed", "per such request", "tools + system",
                    "read when kept"):
        table.add_column(heading, justify="left" if heading in ("session", "window",
                                                                "summariser", "client")
                         else "right")
    for row in rows:
        head = row.head
        table.add_row(
            row.session, row.model, row.summariser, _client(row), str(head.requests),
            f"{head.changed} ({head.changed / max(head.requests - 1, 1):.0%})",
            f"{head.read_share_changed:.0%}",
            format_tokens(head.read_changed // head.changed) if head.changed else "-",
            format_tokens(row.fixed_prefix), f"{head.read_share_kept:.0%}",
        )
    return table


def print_recall(rows: Sequence[Any], run_dir: Any, seconds: float) -> None:
    """The recall benchmark's tables and notes, then issue 45's Goal counted over agent-server's
    runs that a peer finished too (`benchmarks.recall_goal`), then where the logs are."""
    from benchmarks.recall_goal import checks, summary_lines

    strategies = any(getattr(row, "strategy", "default") != "default" for row in rows)
    goal = summary_lines(checks(asdict(row) for row in rows))
    _print_runs([recall_table(rows), *([head_table(rows)] if strategies else [])], rows, 240,
                lambda r: f"{r.session} {r.model} {r.summariser} {_client(r)}",
                "\n".join([*(f"Goal, {line}" for line in goal),
                           f"{len(rows)} runs in {seconds:.0f} s; request logs: {run_dir}"]))


def print_peers(rows: Sequence[Any], run_dir: Any) -> None:
    _print_runs([peers_table(rows)], rows, 200, lambda r: f"{r.client} on {r.model}",
                f"request logs and tool results: {run_dir}")


def _print_runs(tables: Sequence[Table], rows: Sequence[Any], width: int,
                run: Callable[[Any], str], last_line: str) -> None:
    """Tables of runs, then each run's notes (`run` names it), then `last_line`."""
    console = Console(width=width)
    for table in tables:
        console.print(table)
    for row in rows:
        for note in row.notes:
            console.print(f"{run(row)}: {note}")
    console.print(last_line)


def conformance_table(results: Sequence[Mapping[str, Any]]) -> Table:
    """compaction-conformance-kit: canary survival by type, round 1 to 5, per compactor."""
    table = Table(title="compaction-conformance-kit 0.8.0, seeded session: canaries surviving, "
                        "by type, rounds 1-5 (4 canaries per type)")
    table.add_column("compactor")
    types = list(results[0]["survival"]) if results else []
    for ctype in types:
        table.add_column(ctype, justify="right")
    table.add_column("after round 5", justify="right")
    table.add_column("mean over rounds", justify="right")
    for result in results:
        curves = [", ".join(f"{value * 4:.0f}" for value in result["survival"][ctype])
                  for ctype in types]
        table.add_row(result["compactor"], *curves,
                      f"{result['survived_after_last_round']} of {result['canaries']}",
                      f"{result['mean_survival']:.1%}")
    return table


def print_conformance(results: Sequence[Mapping[str, Any]]) -> None:
    Console(width=200).print(conformance_table(results))
