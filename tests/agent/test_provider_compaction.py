"""The provider's own compaction (`compaction.engine: "provider"`) and context editing
(`compaction.clearToolResults`) in real sessions, against the simulator over real HTTP through
the official SDKs: the compaction entry keeps the provider's block or items as returned and a
reload sends them back byte for byte; the editor gets the usual compaction events; rewinds,
overflow recovery (one compaction, one retry) and a switch to an API that cannot read an
encrypted compaction all work."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.agent import events
from agent_server.agent.session import AgentSession
from agent_server.agent.settings import AgentSettings
from agent_server.agent.workspace import WorkspaceAgent
from agent_server.context.trigger import CompactionSettings
from agent_server.session.entries import CompactionEntry
from agent_server.sim.records import RequestRecord
from agent_server.sim.scenario import default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from tests.agent.conftest import FAST_RETRY

PROMPTS = default_scenario().prompts
PROVIDER = CompactionSettings(engine="provider")


@dataclass
class Harness:
    """One simulator, one workspace and sessions directory; agents opened on it with any
    provider setting (a restart, or a switch of provider between two runs of the server)."""

    sim: Simulator
    base_url: str
    workspace: Path
    sessions: Path
    events: list[events.AgentEvent] = field(default_factory=list)
    agents: list[WorkspaceAgent] = field(default_factory=list)

    def agent(self, provider: str = "sim", **settings: Any) -> WorkspaceAgent:
        url = self.base_url + ("/v1" if provider.startswith("openai") else "")
        settings.setdefault("model", "sim-small")
        agent = WorkspaceAgent(self.workspace, AgentSettings(
            provider=provider, base_url=url, sessions_dir=str(self.sessions),
            permissions_mode="allowAll", **settings), retry=FAST_RETRY)
        self.agents.append(agent)
        return agent

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    def requests(self, api: str) -> list[RequestRecord]:
        return [record for record in self.sim.records if record.api == api]


@asynccontextmanager
async def harness(tmp_path: Path, faults: str | None = None) -> AsyncIterator[Harness]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_sample_workspace(workspace)
    simulator = Simulator(faults=faults)
    async with SimServer(simulator) as server:
        running = Harness(simulator, server.base_url, workspace, tmp_path / "sessions")
        try:
            yield running
        finally:
            for agent in running.agents:
                await agent.close()


async def until_compacted(session: AgentSession, start: int = 0) -> int:
    """Run the scenario's prompts from `start` until one compacts; the next prompt's index."""
    for index in range(start, len(PROMPTS)):
        result = await session.run_turn(PROMPTS[index])
        assert result.stop_reason == "end_turn", result.error
        if latest_compaction(session) is not None:
            return index + 1
    raise AssertionError("the scenario never compacted")


def latest_compaction(session: AgentSession) -> CompactionEntry | None:
    found = [entry for entry in session.ledger.tree.branch() if isinstance(entry, CompactionEntry)]
    return found[-1] if found else None


async def test_anthropic_compacts_on_its_side_and_a_reload_sends_the_block_back_unchanged(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as run:
        agent = run.agent(compaction=PROVIDER)
        session = agent.create(emit=run.events.append)
        following = await until_compacted(session)
        entry = latest_compaction(session)
        assert entry is not None and entry.provider is not None
        block = entry.provider.items[0]
        assert entry.provider.api == "anthropic-messages"
        assert block["type"] == "compaction" and block["signature"]
        assert entry.summary == block["content"]  # readable: shown in the transcript
        assert entry.usage is not None and entry.usage.total_tokens > 0  # its cost, billed
        compactions = [r for r in run.requests("anthropic-messages") if r.compactions]
        assert compactions and "compaction" in compactions[-1].request
        assert compactions[-1].request["compaction"] == {"type": "summarize"}
        # The editor is told as for any compaction.
        finished = [e for e in run.of(events.CompactionFinished) if e.status == "completed"]
        assert finished and finished[-1].summary == entry.summary
        # The next request opens with the block, as returned; the simulator checked its
        # signature (a changed byte is refused).
        await session.run_turn(PROMPTS[following])
        after = run.requests("anthropic-messages")[-1]
        assert after.status == 200
        assert after.request["messages"][0] == {"role": "assistant", "content": [block]}
        # A restart: the ledger gives the same block back, byte for byte.
        await agent.close()
        reopened = run.agent(compaction=PROVIDER).open(session.session_id,
                                                       emit=run.events.append)
        await reopened.run_turn(PROMPTS[following + 1])
        reloaded = run.requests("anthropic-messages")[-1]
        assert reloaded.status == 200
        first = reloaded.request["messages"][0]["content"][0]
        assert json.dumps(first, sort_keys=True) == json.dumps(dict(block), sort_keys=True)


async def test_rewind_to_before_a_provider_compaction_leaves_it_behind(tmp_path: Path) -> None:
    async with harness(tmp_path) as run:
        session = run.agent(compaction=PROVIDER).create(emit=run.events.append)
        following = await until_compacted(session)
        entry = latest_compaction(session)
        assert entry is not None and entry.provider is not None
        prompts = [e for e in session.ledger.tree.branch()
                   if getattr(getattr(e, "message", None), "role", "") == "user"
                   and e.message.note is None]  # type: ignore[union-attr]
        await session.rewind(prompts[1].id)  # to before the second prompt
        await session.run_turn(PROMPTS[1])
        request = run.requests("anthropic-messages")[-1]
        assert request.status == 200
        assert "compaction" not in json.dumps(request.request["messages"][0])
        assert latest_compaction(session) is None or latest_compaction(session) != entry
        assert following > 1


async def test_an_overflow_is_recovered_by_one_compaction_and_one_retry(tmp_path: Path) -> None:
    async with harness(tmp_path) as run:
        session = run.agent(compaction=PROVIDER).create(emit=run.events.append)
        index = 0
        while session.context.view().tokens < 10_000:  # a third of the window, not compacted yet
            assert (await session.run_turn(PROMPTS[index])).stop_reason == "end_turn"
            index += 1
        assert latest_compaction(session) is None
        before = len(run.sim.records)
        run.sim.set_faults("overflow@1")  # the next request is refused as too long
        result = await session.run_turn(PROMPTS[index])
        assert result.stop_reason == "end_turn", result.error
        actions = [e.action for e in run.of(events.OverflowHappened)]
        assert actions == ["compacting", "retrying"]
        made = run.sim.records[before:]
        assert made[0].status == 400 and all(r.status == 200 for r in made[1:])
        compactions = [e for e in session.ledger.tree.branch() if isinstance(e, CompactionEntry)]
        assert [e.reason for e in compactions] == ["overflow"]
        # The rejection says the estimate was low: what is left to summarise may not fit the
        # provider's window, so agent-server's bounded prompt writes it, and says why.
        said = [n.message for n in run.of(events.Notice)]
        assert compactions[0].provider is not None or any(
            "provider cannot compact it on its side" in text for text in said)


async def test_a_manual_compaction_is_the_providers(tmp_path: Path) -> None:
    async with harness(tmp_path) as run:
        session = run.agent(compaction=PROVIDER).create(emit=run.events.append)
        for prompt in PROMPTS[:3]:  # below the threshold: nothing compacted yet
            await session.run_turn(prompt)
        result = await session.compact(instructions="Keep every file name.")
        assert result.outcome == "compacted" and result.entry is not None
        assert result.entry.provider is not None and result.entry.reason == "manual"
        request = [r for r in run.requests("anthropic-messages") if r.compactions][-1].request
        assert request["compaction"] == {"type": "summarize",
                                         "instructions": "Keep every file name."}


async def test_an_encrypted_compaction_is_sent_to_openai_and_walked_past_elsewhere(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as run:
        agent = run.agent("openai-responses", compaction=PROVIDER)
        session = agent.create(emit=run.events.append)
        following = await until_compacted(session)
        entry = latest_compaction(session)
        assert entry is not None and entry.provider is not None
        items = entry.provider.items
        assert items[-1]["type"] == "compaction" and entry.provider.summary == ""
        assert run.requests("openai-responses-compact")  # the standalone endpoint
        await session.run_turn(PROMPTS[following])
        sent = run.requests("openai-responses")[-1]
        assert sent.status == 200
        assert sent.request["input"][: len(items)] == [dict(item) for item in items]
        # The same session opened under Anthropic's API: it cannot read the item, so the
        # history it stood for is sent (and summarised here if it does not fit).
        await agent.close()
        session = run.agent("sim", compaction=PROVIDER).open(session.session_id,
                                                             emit=run.events.append)
        notices = len(run.of(events.Notice))
        result = await session.run_turn(PROMPTS[following + 1])
        assert result.stop_reason == "end_turn", result.error
        said = [n.message for n in run.of(events.Notice)[notices:]]
        assert any("only it can read" in text for text in said)
        assert run.requests("anthropic-messages")
        for record in run.requests("anthropic-messages"):
            assert items[-1]["encrypted_content"] not in json.dumps(record.request)
        # The history it stood for did not fit: compacted again, by agent-server or Anthropic.
        again = latest_compaction(session)
        assert again is not None and again.id != entry.id


async def test_anthropic_compaction_reads_as_text_on_openai(tmp_path: Path) -> None:
    async with harness(tmp_path) as run:
        agent = run.agent(compaction=PROVIDER)
        session = agent.create(emit=run.events.append)
        following = await until_compacted(session)
        entry = latest_compaction(session)
        assert entry is not None and entry.provider is not None
        await agent.close()
        session = run.agent("openai-responses").open(session.session_id,
                                                     emit=run.events.append)
        assert (await session.run_turn(PROMPTS[following])).stop_reason == "end_turn"
        sent = run.requests("openai-responses")[0]
        first = sent.request["input"][0]
        text = "".join(part.get("text", "") for part in first["content"])
        assert first["role"] == "user" and entry.summary in text


async def test_without_a_compaction_of_its_own_the_provider_engine_compacts_locally(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as run:
        session = run.agent("openai-chat", compaction=PROVIDER).create(emit=run.events.append)
        await until_compacted(session)
        entry = latest_compaction(session)
        assert entry is not None and entry.provider is None and entry.summary
        said = [n.message for n in run.of(events.Notice)]
        assert sum("has no compaction of its own" in text for text in said) == 1


async def test_a_failed_provider_compaction_falls_back_to_a_local_summary(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as run:
        session = run.agent("openai-responses", compaction=PROVIDER).create(
            emit=run.events.append)
        for prompt in PROMPTS[:3]:  # below the threshold: nothing compacted yet
            await session.run_turn(prompt)
        # The compact endpoint refuses the request as larger than the account's rate limit
        # (not retried); agent-server summarises instead, in the same compaction.
        run.sim.set_faults("toolarge@1:100")
        result = await session.compact()
        assert result.outcome == "compacted"
        assert result.entry is not None and result.entry.provider is None
        said = [n.message for n in run.of(events.Notice)]
        assert any("The provider's compaction failed" in text for text in said)


async def test_clearing_tool_results_is_opt_in_and_its_cost_is_shown(tmp_path: Path) -> None:
    async with harness(tmp_path) as run:
        settings = CompactionSettings(clear_tool_results=True)
        session = run.agent(compaction=settings).create(emit=run.events.append)
        for prompt in PROMPTS[:6]:
            assert (await session.run_turn(prompt)).stop_reason == "end_turn"
        bodies = [r.request for r in run.requests("anthropic-messages")]
        edits = [body["context_management"]["edits"][0] for body in bodies
                 if "context_management" in body]
        assert len(edits) == len(bodies)
        assert all(edit["type"] == "clear_tool_uses_20250919" for edit in edits)
        assert edits[0]["trigger"]["value"] < 24_576  # below the compaction threshold
        cleared = [n.message for n in run.of(events.Notice) if "cleared" in n.message]
        assert cleared and "written to the cache again" in cleared[0] and "$" in cleared[0]
        # Off by default: nothing is cleared.
        plain = run.agent().create()
        before = len(run.requests("anthropic-messages"))
        await plain.run_turn(PROMPTS[0])
        assert all("context_management" not in r.request
                   for r in run.requests("anthropic-messages")[before:])


