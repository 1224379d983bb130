"""Ledger and projection speed at 1k, 10k and 100k entries.

Builds a realistic session (prompts, tool round trips with 1-2 KB results, answers with
usage) with compactions whenever the estimate crosses the threshold of a 128k-window model,
exactly as the agent would plan them (find_cut_point + a compaction entry), then measures:

- append: mean time per append (fsync="never": the disk is not what is measured);
- load: Ledger.open of the whole file (parse, index, lock);
- turn: what the agent does before every model call: projection_entries + project +
  estimate_context_tokens (median);
- branch: the same projection computed from the whole root-to-leaf branch, for contrast;
- list: SessionStore.list with a fresh sidecar, and the full scan that rebuilds one.

    .venv/bin/python benchmarks/ledger_bench.py [--sizes 1000 10000 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_server.context.cut_point import find_cut_point
from agent_server.context.estimate import estimate_context_tokens, estimate_tokens
from agent_server.context.projection import project
from agent_server.context.trigger import (
    CompactionSettings,
    max_kept_tokens,
    should_compact,
)
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import CompactionEntry
from agent_server.session.ledger import Ledger
from agent_server.session.store import SessionStore, scan_meta

MODEL = ModelInfo("bench-128k", "Benchmark model", "local", 128_000, 16_384)
SETTINGS = CompactionSettings()
SYSTEM_PROMPT = "You are a coding agent working in a repository. " * 40
TOOLS = tuple(
    ToolSpec(
        name, f"The {name} tool.", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    for name in ("read", "write", "edit", "bash", "grep", "find", "ls")
)
WORDS = (
    *("the", "parser", "fails", "when", "a", "token", "spans", "two", "lines"),
    *("so", "we", "read", "the", "lexer", "and", "fix", "it"),
)


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _measure(action: Callable[[], object], repeat: int) -> float:
    """Median seconds of `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _context_of(ledger: Ledger) -> tuple[Context, int]:
    projection = project(ledger.tree.projection_entries())
    return Context(SYSTEM_PROMPT, TOOLS, projection.messages), projection.fresh_from


def build_session(ledger: Ledger, entries: int, seed: int = 7) -> dict[str, float]:
    """Fill `ledger` with about `entries` entries of realistic turns; returns build stats."""
    rng = random.Random(seed)
    append_time = 0.0
    appends = 0
    compactions = 0
    call_number = 0

    def append(message: UserMessage | AssistantMessage | ToolResultMessage) -> None:
        nonlocal append_time, appends
        start = time.perf_counter()
        ledger.append_message(message)
        append_time += time.perf_counter() - start
        appends += 1

    while ledger.entry_count < entries:
        # Before the model call: the agent's check.
        context, fresh_from = _context_of(ledger)
        tokens = estimate_context_tokens(context, fresh_from=fresh_from).tokens
        if should_compact(tokens, MODEL, SETTINGS):
            entries_now = ledger.tree.projection_entries()
            cut = find_cut_point(
                entries_now,
                keep_recent_tokens=SETTINGS.keep_recent_tokens,
                keep_recent_turns=SETTINGS.keep_recent_turns,
                max_kept_tokens=max_kept_tokens(MODEL, SETTINGS),
            )
            if cut.can_compact:
                ledger.add(
                    CompactionEntry,
                    summary="## Goal\n" + _text(rng, 3000),
                    first_kept_entry_id=cut.first_kept_entry_id,
                    tokens_before=tokens,
                    tokens_after=None,
                    reason="threshold",
                    split_turn_summary=_text(rng, 600) if cut.is_split_turn else None,
                )
                compactions += 1
                context, fresh_from = _context_of(ledger)
                tokens = estimate_context_tokens(context, fresh_from=fresh_from).tokens
        prompt = UserMessage.of_text(_text(rng, rng.randint(80, 600)))
        append(prompt)
        context_tokens = tokens + estimate_tokens(prompt)
        for _ in range(rng.randint(1, 4)):
            call_number += 1
            call = ToolCall(f"call_{call_number}", "read", {"path": f"src/module_{call_number}.py"})
            step = AssistantMessage(
                (TextContent(_text(rng, rng.randint(50, 300))), call), "toolUse", model=MODEL.id
            )
            context_tokens += estimate_tokens(step)
            append(replace(step, usage=Usage(input=200, cache_read=context_tokens - 200)))
            output = ToolResultMessage(
                call.id, "read", (TextContent(_text(rng, rng.randint(500, 2500))),)
            )
            context_tokens += estimate_tokens(output)
            append(output)
        answer = AssistantMessage(
            (TextContent(_text(rng, rng.randint(200, 900))),), "stop", model=MODEL.id
        )
        context_tokens += estimate_tokens(answer)
        append(replace(answer, usage=Usage(input=300, cache_read=context_tokens - 300)))
    ledger.sync()
    return {"append_us": append_time / appends * 1e6, "compactions": compactions}


def bench_size(entries: int, directory: Path) -> dict[str, Any]:
    store = SessionStore(directory / "sessions", fsync="never")
    workspace = directory / "workspace"
    workspace.mkdir(exist_ok=True)
    ledger = store.create(workspace, title=f"bench {entries}", model=MODEL.id)
    session_id = ledger.session_id
    start = time.perf_counter()
    stats = build_session(ledger, entries)
    build_seconds = time.perf_counter() - start
    path = ledger.path
    ledger.close()

    size_mb = path.stat().st_size / 1e6
    load_seconds = _measure(lambda: Ledger.open(path, fsync="never").close(), repeat=3)

    with Ledger.open(path, fsync="never") as loaded:
        tail = loaded.tree.projection_entries()
        projection = project(tail)

        def per_turn() -> None:
            context, fresh_from = _context_of(loaded)
            estimate_context_tokens(context, fresh_from=fresh_from)

        def from_branch() -> None:
            full = project(loaded.tree.branch())
            estimate_context_tokens(
                Context(SYSTEM_PROMPT, TOOLS, full.messages), fresh_from=full.fresh_from
            )

        turn_seconds = _measure(per_turn, repeat=200)
        branch_seconds = _measure(from_branch, repeat=5 if entries >= 100_000 else 20)
        branch_length = len(loaded.tree.branch())

    list_seconds = _measure(lambda: store.list(workspace), repeat=20)
    scan_seconds = _measure(lambda: scan_meta(path), repeat=3)
    [info] = store.list(workspace)
    assert info.session_id == session_id
    assert info.entry_count >= entries

    return {
        "entries": entries,
        "file_mb": round(size_mb, 1),
        "compactions": stats["compactions"],
        "branch_entries": branch_length,
        "projection_entries": len(tail),
        "projection_messages": len(projection.messages),
        "append_us": round(stats["append_us"], 1),
        "build_s": round(build_seconds, 2),
        "load_ms": round(load_seconds * 1e3, 1),
        "turn_ms": round(turn_seconds * 1e3, 3),
        "branch_ms": round(branch_seconds * 1e3, 2),
        "list_ms": round(list_seconds * 1e3, 3),
        "scan_ms": round(scan_seconds * 1e3, 1),
    }


def run(sizes: Sequence[int] = (1_000, 10_000, 100_000)) -> list[dict[str, Any]]:
    results = []
    for entries in sizes:
        with tempfile.TemporaryDirectory(prefix="ledger-bench-") as directory:
            results.append(bench_size(entries, Path(directory)))
    return results


COLUMNS = (
    ("entries", "entries"),
    ("file_mb", "file MB"),
    ("compactions", "compactions"),
    ("projection_entries", "proj. entries"),
    ("append_us", "append µs"),
    ("load_ms", "load ms"),
    ("turn_ms", "turn ms"),
    ("branch_ms", "full-branch ms"),
    ("list_ms", "list ms"),
    ("scan_ms", "rescan ms"),
)


def format_table(results: Sequence[dict[str, Any]]) -> str:
    header = [title for _, title in COLUMNS]
    rows = [[str(result[key]) for key, _ in COLUMNS] for result in results]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [
        " | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    results = run(args.sizes)
    print(format_table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
