"""Cache-TTL awareness in real turns: the simulator and the session share one clock, which the
tests move over pauses longer (or shorter) than the provider's cache lifetime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent import events
from agent_server.agent.settings import AgentSettings
from tests.agent.conftest import agent_run


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def page(n: int) -> dict[str, Any]:
    return {"tools": [{"name": "read",
                       "arguments": {"path": "logs/app.log", "offset": 1 + 250 * n, "limit": 250}}]}


# Turn 1 reads three pages of the log (about 15k tokens with their repeated tracebacks
# folded: past half the 24,576-token threshold of sim-small, under the threshold); turn 2 asks
# for a small thing.
SCENARIO = {
    "turns": [
        {"user": "Read the start of the log.",
         "steps": [page(0), page(1), page(2), {"text": "Read."}]},
        {"user": "What is in the README?",
         "steps": [{"tools": [{"name": "read", "arguments": {"path": "README.md"}}]},
                   {"text": "A README."}]},
    ]
}


def marks(record: Any) -> list[dict[str, Any]]:
    """Every cache_control mark of an Anthropic request body."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                found.append(value["cache_control"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(record.request)
    return found


# Each pause is taken in the running server, or across a restart: the session closed and
# opened again from its ledger in a new agent (the last call's time and cache retention are
# then the ledger's).
RESTARTED = pytest.mark.parametrize("restarted", [False, True], ids=["live", "reopened"])


async def pause(run: Any, clock: Clock, seconds: float, restarted: bool) -> None:
    if restarted:
        await run.restart()
    clock.now += seconds


def notices(run: Any) -> list[str]:
    return [n.message for n in run.of(events.Notice) if "prompt cache expired" in n.message]


@RESTARTED
async def test_a_pause_past_the_ttl_compacts_a_large_context_and_says_what_it_cost(
    tmp_path: Path, restarted: bool
) -> None:
    clock = Clock()
    async with agent_run(tmp_path, scenario=SCENARIO, clock=clock) as run:
        first = await run.session.run_turn("Read the start of the log.")
        assert first.stop_reason == "end_turn"
        assert not run.of(events.CompactionFinished)
        sent = len(run.model_requests)
        await pause(run, clock, 6 * 60, restarted)  # past Anthropic's 5 minutes
        second = await run.session.run_turn("What is in the README?")
        assert second.stop_reason == "end_turn"

        [notice] = notices(run)
        assert "6 minutes" in notice and "5 minutes" in notice
        assert "$" in notice and "compacted now" in notice
        finished = run.of(events.CompactionFinished)
        assert [(f.reason, f.status) for f in finished] == [("idle", "completed")]
        decided = [d.decision for d in run.of(events.ContextDecided)]
        assert ("compact", "idle") in [(d.action, d.reason) for d in decided]

        after = run.model_requests[sent:]
        summary = next(r for r in after if r.source == "summary")
        # The cold prefix is read at the input price, never written: no marks, no writes.
        assert marks(summary) == []
        assert summary.tokens.cache_read == 0
        assert summary.tokens.cache_write_5m == summary.tokens.cache_write_1h == 0
        # The turn's own calls send the compacted context, smaller than before the pause.
        calls = [r for r in after if r.source != "summary"]
        assert calls[0].tokens.cache_read == 0
        before_pause = run.model_requests[sent - 1]
        assert calls[0].tokens.input + calls[0].tokens.cache_read + calls[0].tokens.cache_write_5m \
            < before_pause.tokens.cache_read + before_pause.tokens.cache_write_5m


@RESTARTED
async def test_a_pause_within_the_ttl_reads_the_cache_and_says_nothing(
    tmp_path: Path, restarted: bool
) -> None:
    clock = Clock()
    async with agent_run(tmp_path, scenario=SCENARIO, clock=clock) as run:
        await run.session.run_turn("Read the start of the log.")
        sent = len(run.model_requests)
        await pause(run, clock, 4 * 60, restarted)
        await run.session.run_turn("What is in the README?")
        assert notices(run) == []
        assert not run.of(events.CompactionFinished)
        assert run.model_requests[sent].tokens.cache_read > 10_000


@RESTARTED
async def test_a_cold_pause_on_a_small_context_is_only_reported(
    tmp_path: Path, restarted: bool
) -> None:
    scenario = {"turns": [{"user": "Hi.", "steps": [{"text": "Hello."}]},
                          {"user": "Again.", "steps": [{"text": "Hello again."}]}]}
    clock = Clock()
    async with agent_run(tmp_path, scenario=scenario, clock=clock) as run:
        await run.session.run_turn("Hi.")
        sent = len(run.model_requests)
        await pause(run, clock, 20 * 60, restarted)
        await run.session.run_turn("Again.")
        [notice] = notices(run)
        assert "20 minutes" in notice and "compacted" not in notice
        assert not run.of(events.CompactionFinished)
        assert run.model_requests[sent].tokens.cache_read == 0


@RESTARTED
async def test_auto_retention_keeps_the_cache_an_hour_while_the_user_is_away(
    tmp_path: Path, restarted: bool
) -> None:
    clock = Clock()
    settings = AgentSettings(permissions_mode="allowAll", cache_retention="auto")
    async with agent_run(tmp_path, scenario=SCENARIO, settings=settings, clock=clock) as run:
        run.session.set_user_idle(True)
        await run.session.run_turn("Read the start of the log.")
        assert all(m.get("ttl") == "1h" for r in run.model_requests for m in marks(r))
        sent = len(run.model_requests)
        await pause(run, clock, 20 * 60, restarted)  # past 5 minutes, within the hour
        run.session.set_user_idle(False)
        await run.session.run_turn("What is in the README?")
        assert notices(run) == []
        assert not run.of(events.CompactionFinished)
        assert run.model_requests[sent].tokens.cache_read > 10_000


@RESTARTED
async def test_auto_retention_is_short_and_goes_long_for_a_user_who_came_back_late(
    tmp_path: Path, restarted: bool
) -> None:
    clock = Clock()
    settings = AgentSettings(permissions_mode="allowAll", cache_retention="auto")
    scenario = {"turns": [{"user": "Hi.", "steps": [{"text": "Hello."}]},
                          {"user": "Again.", "steps": [{"text": "Hello again."}]}]}
    async with agent_run(tmp_path, scenario=scenario, settings=settings, clock=clock) as run:
        await run.session.run_turn("Hi.")
        first = [m for r in run.model_requests for m in marks(r)]
        assert first and all("ttl" not in m for m in first)
        sent = len(run.model_requests)
        await pause(run, clock, 7 * 60, restarted)
        await run.session.run_turn("Again.")
        assert len(notices(run)) == 1  # the short cache had expired
        later = [m for r in run.model_requests[sent:] for m in marks(r)]
        assert later and all(m.get("ttl") == "1h" for m in later)


# --- a ledger from before answers recorded their retention ------------------------------------


def forget_retention(ledger: Path) -> None:
    """The ledger as a server before this change wrote it: no cache retention, no index."""
    lines = [json.loads(line) for line in ledger.read_text("utf-8").splitlines()]
    recorded = [line.pop("cacheRetention", None) for line in lines]
    assert "short" in recorded
    ledger.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    ledger.with_name(ledger.name.removesuffix(".jsonl") + ".index.json").unlink(missing_ok=True)


async def test_a_reopened_ledger_that_does_not_record_its_calls_is_never_cold(
    tmp_path: Path,
) -> None:
    clock = Clock()
    async with agent_run(tmp_path, scenario=SCENARIO, clock=clock) as run:
        await run.session.run_turn("Read the start of the log.")
        assert run.restart is not None
        await run.restart(forget_retention)
        clock.now += 6 * 60
        second = await run.session.run_turn("What is in the README?")
        assert second.stop_reason == "end_turn"
        assert notices(run) == []  # unknown: as before, the pause is not counted
        assert not run.of(events.CompactionFinished)
