"""Cache-TTL awareness in real turns: the simulator and the session share one clock, which the
tests move over pauses longer (or shorter) than the provider's cache lifetime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


# Turn 1 reads two pages of the log (about 13k tokens: past half the 24,576-token threshold of
# sim-small, under the threshold); turn 2 asks for a small thing.
SCENARIO = {
    "turns": [
        {"user": "Read the start of the log.", "steps": [page(0), page(1), {"text": "Read."}]},
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


def notices(run: Any) -> list[str]:
    return [n.message for n in run.of(events.Notice) if "prompt cache expired" in n.message]


async def test_a_pause_past_the_ttl_compacts_a_large_context_and_says_what_it_cost(
    tmp_path: Path,
) -> None:
    clock = Clock()
    async with agent_run(tmp_path, scenario=SCENARIO, clock=clock) as run:
        first = await run.session.run_turn("Read the start of the log.")
        assert first.stop_reason == "end_turn"
        assert not run.of(events.CompactionFinished)
        sent = len(run.model_requests)
        clock.now += 6 * 60  # past Anthropic's 5 minutes
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
        before_pause = run.model_requests[sent - 1]
        assert calls[0].tokens.input + calls[0].tokens.cache_read + calls[0].tokens.cache_write_5m \
            < before_pause.tokens.cache_read + before_pause.tokens.cache_write_5m


async def test_a_pause_within_the_ttl_reads_the_cache_and_says_nothing(tmp_path: Path) -> None:
    clock = Clock()
    async with agent_run(tmp_path, scenario=SCENARIO, clock=clock) as run:
        await run.session.run_turn("Read the start of the log.")
        sent = len(run.model_requests)
        clock.now += 4 * 60
        await run.session.run_turn("What is in the README?")
        assert notices(run) == []
        assert not run.of(events.CompactionFinished)
        assert run.model_requests[sent].tokens.cache_read > 10_000


async def test_a_cold_pause_on_a_small_context_is_only_reported(tmp_path: Path) -> None:
    scenario = {"turns": [{"user": "Hi.", "steps": [{"text": "Hello."}]},
                          {"user": "Again.", "steps": [{"text": "Hello again."}]}]}
    clock = Clock()
    async with agent_run(tmp_path, scenario=scenario, clock=clock) as run:
        await run.session.run_turn("Hi.")
        clock.now += 20 * 60
        await run.session.run_turn("Again.")
        [notice] = notices(run)
        assert "20 minutes" in notice and "compacted" not in notice
        assert not run.of(events.CompactionFinished)


async def test_auto_retention_keeps_the_cache_an_hour_while_the_user_is_away(
    tmp_path: Path,
) -> None:
    clock = Clock()
    settings = AgentSettings(permissions_mode="allowAll", cache_retention="auto")
    async with agent_run(tmp_path, scenario=SCENARIO, settings=settings, clock=clock) as run:
        run.session.set_user_idle(True)
        await run.session.run_turn("Read the start of the log.")
        assert all(m.get("ttl") == "1h" for r in run.model_requests for m in marks(r))
        sent = len(run.model_requests)
        clock.now += 20 * 60  # past 5 minutes, within the hour
        run.session.set_user_idle(False)
        await run.session.run_turn("What is in the README?")
        assert notices(run) == []
        assert not run.of(events.CompactionFinished)
        assert run.model_requests[sent].tokens.cache_read > 10_000


async def test_auto_retention_is_short_and_goes_long_for_a_user_who_came_back_late(
    tmp_path: Path,
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
        clock.now += 7 * 60
        await run.session.run_turn("Again.")
        assert len(notices(run)) == 1  # the short cache had expired
        later = [m for r in run.model_requests[sent:] for m in marks(r)]
        assert later and all(m.get("ttl") == "1h" for m in later)
