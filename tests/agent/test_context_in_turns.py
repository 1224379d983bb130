"""Context management in real turns: the agent against the simulator over real HTTP.

The ways it used to fail: a huge paste that stuck the session, a rewind that merged two
prompts, an editor note taken for the user's words and forgotten after a reload, and no
per-turn usage.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import string
import time
from pathlib import Path

from agent_server.agent import events
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.context.summary_prompt import BRANCH_SUMMARY_PREFIX, SUMMARY_REQUEST_MARKER
from agent_server.context.trigger import CompactionSettings
from agent_server.llm.messages import UserMessage
from agent_server.session.entries import BranchEntry, CompactionEntry, MessageEntry
from agent_server.sim.request_checks import check_requests, prefix_problem
from agent_server.sim.scenario import default_scenario
from tests.agent.conftest import FAST_RETRY, agent_run

PROMPTS = default_scenario().prompts
LARGE = AgentSettings(permissions_mode="allowAll", model="sim-large")  # a 200k window


def log_paste(size: int) -> str:
    """A pasted log of about `size` characters."""
    rng = random.Random(7)
    lines = ["Why is this job so slow?"]
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(
            f"2026-01-{rng.randint(1, 28):02d} INFO worker-{rng.randint(1, 64)} processed job "
            f"{rng.randint(1, 10**9)} in {rng.random():.3f}s status=ok"
        )
    return "\n".join(lines)


def carries(record: object, text: str) -> bool:
    return text in json.dumps(record.request, ensure_ascii=False)  # type: ignore[attr-defined]


def user_texts(body: dict) -> list[str]:  # type: ignore[type-arg]
    """The text blocks of each user message of an Anthropic request body, joined."""
    return [
        "\n".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
        for message in body["messages"]
        if message["role"] == "user"
    ]


async def test_a_huge_paste_is_refused_at_once_and_the_session_stays_usable(
    tmp_path: Path,
) -> None:
    paste = log_paste(1_200_000)  # 1.2 MB: about 300k tokens by chars/4 on a 200k window
    marker = paste.splitlines()[1]
    async with agent_run(tmp_path, settings=LARGE) as run:
        outcomes = []
        for prompt in (paste, PROMPTS[0], paste, PROMPTS[1]):
            before = len(run.model_requests)
            result = await run.session.run_turn(prompt)
            outcomes.append((result.stop_reason, result.error_code, len(run.model_requests) - before))
        # Each paste: refused before any request; each normal prompt after it: answered.
        assert [(stop, code) for stop, code, _ in outcomes] == [
            ("error", "prompt_too_large"),
            ("end_turn", None),
            ("error", "prompt_too_large"),
            ("end_turn", None),
        ]
        assert outcomes[0][2] == outcomes[2][2] == 0
        assert all(r.status == 200 for r in run.model_requests)  # nothing rejected, ever
        assert not any(carries(r, marker) for r in run.model_requests)
        refused = [e.error for e in run.of(events.TurnEnded) if e.error]
        assert len(refused) == 2 and "Shorten it" in refused[0]
        assert not [n for n in run.of(events.Notice) if n.level == "error"]  # told once
        # The paste is kept, on a branch of its own; the conversation went on without it.
        pastes = [
            e for e in run.session.ledger.tree.entries
            if isinstance(e, MessageEntry) and marker in str(e.message)
        ]
        assert len(pastes) == 2
        branch = {e.id for e in run.session.ledger.tree.branch()}
        assert not any(e.id in branch for e in pastes)
        assert check_requests(run.sim.records).ok


async def test_dense_content_rejected_by_the_provider_is_recovered_once_and_not_resent(
    tmp_path: Path,
) -> None:
    # Random letters (keys, identifiers) count about 2.5 characters a token, where any
    # estimate without the model's tokenizer says 4: under the threshold, really over the
    # window.
    rng = random.Random(3)
    letters = "".join(rng.choice(string.ascii_letters) for _ in range(560_000))
    blob = "\n".join(letters[i : i + 76] for i in range(0, len(letters), 76))
    async with agent_run(tmp_path, settings=LARGE) as run:
        first = await run.session.run_turn("Decode this:\n" + blob)
        assert first.stop_reason == "end_turn", first
        statuses = [(r.status, r.source) for r in run.model_requests]
        assert statuses[0][0] == 400  # the one rejection
        assert statuses[1] == (200, "summary")
        assert all(status == 200 for status, _ in statuses[1:])
        # The summary request was fresh and bounded: not the rejected request again.
        summary_request = json.dumps(run.model_requests[1].request)
        assert len(summary_request) < len(blob) // 4
        overflow = [(o.kind, o.action) for o in run.of(events.OverflowHappened)]
        assert overflow == [("rejected", "compacting"), ("rejected", "retrying")]
        second = await run.session.run_turn(PROMPTS[0])
        assert second.stop_reason == "end_turn"
        assert all(r.status == 200 for r in run.model_requests[len(statuses) :])


async def test_rewinding_to_a_prompt_asks_again_without_the_old_prompt(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        await run.session.run_turn(PROMPTS[0])
        await run.session.run_turn(PROMPTS[1])
        second = next(
            e for e in reversed(run.session.ledger.tree.branch())
            if isinstance(e, MessageEntry) and e.message == UserMessage.of_text(PROMPTS[1])
        )
        rewound = await run.session.rewind(second.id)
        assert rewound.prompt == UserMessage.of_text(PROMPTS[1]).content  # to edit and resend
        assert rewound.summary is None
        before = len(run.model_requests)
        result = await run.session.run_turn(PROMPTS[2])
        assert result.stop_reason == "end_turn"
        body = run.model_requests[before].request
        texts = user_texts(body)
        assert texts[-1] == PROMPTS[2]  # the new prompt alone, not merged with the old one
        assert not any(PROMPTS[1] in text for text in texts)
        assert any(PROMPTS[0] in text for text in texts)  # the history up to that point


async def test_a_rewind_can_leave_a_summary_of_the_branch_behind(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        await run.session.run_turn(PROMPTS[0])
        start = next(e for e in run.session.ledger.tree.branch() if isinstance(e, MessageEntry))
        await run.session.run_turn(PROMPTS[1])
        before = len(run.model_requests)
        rewound = await run.session.rewind(start.id, summarize=True)
        summary_requests = run.model_requests[before:]
        assert [r.source for r in summary_requests] == ["summary"]
        assert carries(summary_requests[0], PROMPTS[1])
        assert rewound.summary
        branch = run.session.ledger.tree.get(rewound.leaf_id)
        assert isinstance(branch, BranchEntry) and branch.summary == rewound.summary
        await run.session.run_turn(PROMPTS[2])
        texts = user_texts(run.model_requests[-1].request)
        assert any(f"<editor-note>\n{BRANCH_SUMMARY_PREFIX}" in text for text in texts)
        assert not any(PROMPTS[1] in text and "<editor-note>" not in text for text in texts)


async def test_an_external_edit_is_a_marked_note_that_the_summary_does_not_take_as_a_request(
    tmp_path: Path,
) -> None:
    fresh = CompactionSettings(summary="fresh", keep_recent_turns=1)
    settings = AgentSettings(permissions_mode="allowAll", compaction=fresh)
    async with agent_run(tmp_path, settings=settings) as run:
        await run.session.run_turn(PROMPTS[0])  # reads README.md
        (run.workspace / "README.md").write_text("# rewritten by the user\n")
        await run.session.run_turn(PROMPTS[1])
        notes = [
            e for e in run.session.ledger.tree.branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage) and e.message.note
        ]
        assert [n.message.note for n in notes] == ["externalEdit"]  # type: ignore[union-attr]
        prompt = run.session.ledger.tree.get(
            next(e.id for e in run.session.ledger.tree.branch() if e.parent_id == notes[0].id)
        )
        assert isinstance(prompt, MessageEntry)
        assert prompt.message == UserMessage.of_text(PROMPTS[1])  # the prompt is the user's alone
        body = next(r.request for r in run.model_requests if carries(r, PROMPTS[1]))
        last = user_texts(body)[-1]
        assert last.startswith("<editor-note>\nREADME.md changed on disk")
        assert last.endswith(PROMPTS[1])  # the prompt is still the last text
        await run.session.run_turn(PROMPTS[2])
        compacted = await run.session.compact()  # summarises the first two turns
        assert compacted.outcome == "compacted"
        summary_body = json.dumps(run.model_requests[-1].request, ensure_ascii=False)
        assert SUMMARY_REQUEST_MARKER in summary_body
        assert "[Editor note]: README.md changed on disk" in summary_body
        assert "[User]: <editor-note>" not in summary_body


async def test_files_read_are_known_again_after_a_reload(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        await run.session.run_turn(PROMPTS[0])  # reads README.md
        session_id = run.session.session_id
        workspace, base_url = run.workspace, run.session.settings.base_url
        settings = run.session.settings
        await run.session.close()
        # Edited while no server runs (stamped a little later, as a human edit would be).
        readme = workspace / "README.md"
        readme.write_text("# changed while the editor was closed\n")
        later = time.time() + 5
        os.utime(readme, (later, later))
        agent = WorkspaceAgent(workspace, settings.with_overrides(base_url=base_url), retry=FAST_RETRY)
        try:
            reopened = agent.open(session_id)
            before = len(run.model_requests)
            await reopened.run_turn(PROMPTS[1])
            texts = user_texts(run.model_requests[before].request)
            assert texts[-1].startswith("<editor-note>\nREADME.md changed on disk")
            assert "pyproject" not in texts[-1].split("</editor-note>")[0]  # only what changed
        finally:
            await agent.close()


async def test_each_turn_reports_its_own_usage_next_to_the_session_totals(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        results = []
        for prompt in PROMPTS[:3]:
            start = len(run.model_requests)
            result = await run.session.run_turn(prompt)
            records = [r for r in run.model_requests[start:] if r.tokens is not None]
            results.append((result, records))
        for result, records in results:
            assert result.calls == len(records)
            assert result.usage.input == sum(r.tokens.input for r in records)
            assert result.usage.cache_read == sum(r.tokens.cache_read for r in records)
            assert result.usage.cache_write == sum(r.tokens.cache_write for r in records)
            assert result.usage.output == sum(r.tokens.output for r in records)
            assert result.usage.cost.total > 0
        # The last usage update of each turn carries the turn, and the session's sums.
        ends = [i for i, e in enumerate(run.events) if isinstance(e, events.TurnEnded)]
        for (result, _records), end in zip(results, ends, strict=True):
            update = next(
                e for e in reversed(run.events[:end]) if isinstance(e, events.UsageUpdated)
            )
            assert update.snapshot.turn == result.usage
            assert update.snapshot.turn_calls == result.calls
        # Each meter once: the turn's end after the answer that ended it is not said again
        # (every front end sent it twice).
        said = [e.snapshot for e in run.events if isinstance(e, events.UsageUpdated)]
        assert all(a != b for a, b in itertools.pairwise(said)), said
        snapshot = run.session.usage.snapshot()
        total = sum((result.usage for result, _ in results), start=results[0][0].usage.__class__())
        assert snapshot.session.input == total.input
        assert snapshot.calls == sum(result.calls for result, _ in results)
        assert abs(snapshot.cost - total.cost.total) < 1e-9


async def test_with_automatic_compaction_off_the_usage_does_not_promise_a_compaction_at_the_threshold(
    tmp_path: Path,
) -> None:
    """`compaction.enabled: false`: past the threshold nothing compacts, so the usage's
    `compact_at` (the terminal's "past the compaction point: the next request compacts
    first") is the window, where the overflow recovery would."""
    off = CompactionSettings(enabled=False, threshold=2500)
    async with agent_run(tmp_path, settings=AgentSettings(permissions_mode="allowAll",
                                                          compaction=off)) as run:
        for prompt in PROMPTS[:2]:
            await run.session.run_turn(prompt)
        snapshot = run.session.usage.snapshot()
        assert snapshot.used > 2500
        assert not any(isinstance(e, events.CompactionStarted) for e in run.events)
        assert snapshot.compact_at == snapshot.size


def tool_result_texts(run: object) -> list[str]:
    """The text of every tool result in the ledger's current branch, oldest first."""
    from agent_server.llm.messages import ToolResultMessage

    return [
        e.message.text
        for e in run.session.ledger.tree.branch()  # type: ignore[attr-defined]
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    ]


async def test_an_unchanged_re_read_is_a_note_only_until_a_compaction_folds_the_read_away(
    tmp_path: Path,
) -> None:
    read = {"name": "read", "arguments": {"path": "README.md"}}
    scenario = {"turns": [
        {"user": f"Read the README ({n}).", "steps": [{"tools": [read]}, {"text": "Read."}]}
        for n in range(3)
    ]}
    settings = AgentSettings(
        permissions_mode="allowAll", compaction=CompactionSettings(keep_recent_turns=1)
    )
    async with agent_run(tmp_path, scenario=scenario, settings=settings) as run:
        readme = (run.workspace / "README.md").read_text().rstrip("\n")
        await run.session.run_turn("Read the README (0).")
        await run.session.run_turn("Read the README (1).")
        texts = tool_result_texts(run)
        assert texts[0] == readme
        assert texts[1].startswith("[README.md: unchanged since your earlier read")
        # The compaction keeps only the last turn, whose read was the note: the lines are
        # no longer in the context, so the next read shows them again.
        compacted = await run.session.compact()
        assert compacted.outcome == "compacted"
        await run.session.run_turn("Read the README (2).")
        assert tool_result_texts(run)[2] == readme


async def test_dense_log_pages_compact_early_enough_for_the_cached_summary(
    tmp_path: Path,
) -> None:
    """Pages of a log (about 2.7 characters a token, where chars/4 assumes 4) on a 32k window:
    each compaction is the cached summary, asked while it still fits, and nothing is refused."""
    pages = [
        {"tools": [{"name": "read",
                    "arguments": {"path": "logs/app.log", "offset": 1 + 330 * n, "limit": 330}}]}
        for n in range(7)
    ]
    scenario = {"turns": [{"user": "Page through the log.", "steps": [*pages, {"text": "Done."}]}]}
    async with agent_run(tmp_path, scenario=scenario) as run:
        result = await run.session.run_turn("Page through the log.")
        assert result.stop_reason == "end_turn"
        assert all(r.status == 200 for r in run.model_requests), [
            (r.status, r.source) for r in run.model_requests
        ]
        summaries = [r for r in run.model_requests if r.source == "summary"]
        assert summaries
        # The cached request each time (the session's tools in it), answered in full.
        assert all("tools" in r.request and r.stop_reason == "end_turn" for r in summaries), [
            ("tools" in r.request, r.stop_reason, r.tokens) for r in summaries
        ]
        window = run.session.model.context_window
        for record in summaries:
            assert record.tokens.prompt + record.request["max_tokens"] <= window
            # The page just read stays verbatim, so the summary request leaves it out: it is
            # the request that page answered plus the instruction, all of it read from the
            # cache, nothing written, only the instruction at the input price.
            previous = run.model_requests[run.model_requests.index(record) - 1]
            assert prefix_problem(previous.request, record.request) is None
            assert record.tokens.cache_read == previous.tokens.prompt
            assert record.tokens.cache_write == 0
            assert 0 < record.tokens.input < 1500


def write_numbered(path: Path, lines: int) -> None:
    path.write_text("".join(f"row {i}: value {i * 7919 % 10007} unit {i % 13}\n"
                            for i in range(lines)), encoding="utf-8")


def compact_scenario(focus: str) -> dict[str, object]:
    return {"turns": [
        {"user": "Read both tables, then tidy up.", "steps": [
            {"tools": [{"name": "read", "arguments": {"path": "a.txt"}},
                       {"name": "read", "arguments": {"path": "b.txt"}}]},
            {"tools": [{"name": "compact", "arguments": {"focus": focus}}]},
            {"text": "Both tables are read."},
        ]},
    ]}


async def test_the_model_asks_for_a_compaction_at_a_break_and_it_runs_when_it_pays(
    tmp_path: Path,
) -> None:
    focus = "the row counts of both tables"
    small = AgentSettings(permissions_mode="allowAll")  # sim-small: threshold 24,576
    async with agent_run(tmp_path, scenario=compact_scenario(focus), settings=small) as run:
        write_numbered(run.workspace / "a.txt", 900)  # about 7k tokens each: 16k in all,
        write_numbered(run.workspace / "b.txt", 900)  # past half the threshold, under it
        result = await run.session.run_turn("Read both tables, then tidy up.")
        assert result.stop_reason == "end_turn", result
        [entry] = [e for e in run.session.ledger.tree.entries if isinstance(e, CompactionEntry)]
        assert entry.reason == "requested"
        sources = [r.source for r in run.model_requests]
        assert sources == ["scenario:0:0", "scenario:0:1", "summary", "scenario:0:2"]
        # The summary was asked to keep what the model named.
        assert carries(run.model_requests[2], focus)
        answer = [m for m in run.session.ledger.tree.entries if isinstance(m, MessageEntry)]
        asked = next(e.message for e in answer if getattr(e.message, "tool_name", "") == "compact")
        assert "will be compacted" in asked.text  # type: ignore[union-attr]
        decided = [(e.decision.action, e.decision.reason) for e in run.of(events.ContextDecided)]
        assert decided == [("send", None), ("send", None), ("compact", "requested")]
        assert check_requests(run.sim.records).ok


async def test_a_compaction_asked_for_too_early_is_declined(tmp_path: Path) -> None:
    async with agent_run(tmp_path, scenario=compact_scenario("x"), settings=LARGE) as run:
        write_numbered(run.workspace / "a.txt", 900)
        write_numbered(run.workspace / "b.txt", 900)
        result = await run.session.run_turn("Read both tables, then tidy up.")
        assert result.stop_reason == "end_turn", result
        assert not [e for e in run.session.ledger.tree.entries if isinstance(e, CompactionEntry)]
        asked = [e.message for e in run.session.ledger.tree.entries if isinstance(e, MessageEntry)
                 and getattr(e.message, "tool_name", "") == "compact"]
        assert "Not compacted: the context is at" in asked[0].text  # type: ignore[union-attr]
        assert [r.source for r in run.model_requests] == [
            "scenario:0:0", "scenario:0:1", "scenario:0:2"
        ]




async def test_past_the_threshold_in_a_tool_loop_the_compaction_waits_for_the_next_prompt(
    tmp_path: Path,
) -> None:
    """sim-small: the four reads take the context just past the threshold (24,576) in the
    middle of the turn; its small steps leave the summary room, so the turn goes on and the
    compaction runs before the next prompt's call, summarising a finished turn."""
    scenario = {"turns": [
        {"user": "Read the tables.", "steps": [
            {"tools": [{"name": "read", "arguments": {"path": f"{name}.txt"}}
                       for name in "abcd"]},
            {"tools": [{"name": "ls", "arguments": {"path": "."}}]},
            {"tools": [{"name": "ls", "arguments": {"path": "."}}]},
            {"text": "Read."},
        ]},
        {"user": "Now the next thing.", "steps": [{"text": "Done."}]},
    ]}
    small = AgentSettings(permissions_mode="allowAll")
    async with agent_run(tmp_path, scenario=scenario, settings=small) as run:
        # Each under the window-relative bound of one result (about 18 KB here).
        for name in "abcd":
            write_numbered(run.workspace / f"{name}.txt", 480)
        for prompt in ("Read the tables.", "Now the next thing."):
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn", result
        decided = [e.decision for e in run.of(events.ContextDecided)]
        assert [(d.action, d.reason) for d in decided] == [
            ("send", None), ("send", None), ("wait", "threshold"), ("wait", "threshold"),
            ("compact", "threshold"),
        ]
        for waited in decided[2:4]:
            assert waited.tokens > waited.threshold
        assert [r.source for r in run.model_requests] == [
            "scenario:0:0", "scenario:0:1", "scenario:0:2", "scenario:0:3", "summary",
            "scenario:1:0",
        ]
        # The whole first turn went into the summary or the kept tail: nothing was split.
        [entry] = [e for e in run.session.ledger.tree.entries if isinstance(e, CompactionEntry)]
        assert entry.split_turn_summary is None
        assert check_requests(run.sim.records).ok
