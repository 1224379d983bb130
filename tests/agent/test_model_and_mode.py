"""Switching a session's model and its permission mode, between and during turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.agent.model_choice import choices, switch_cost, switch_note
from agent_server.agent.permissions import PermissionRequest
from agent_server.agent.settings import AgentSettings
from agent_server.agent.transcript import entry_events
from agent_server.agent.workspace import WorkspaceAgent, model_choices
from agent_server.context.trigger import CompactionSettings
from agent_server.errors import ConfigError, UnknownModelError
from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.lsp.items import transcript_items
from agent_server.session.entries import ModelChangeEntry
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.workspace import write_sample_workspace
from tests.agent.conftest import FAST_RETRY, agent_run


async def test_a_switch_keeps_the_session_and_its_cache_note_is_what_the_provider_bills(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path) as run:
        await run.session.run_turn("Give me an overview of this repository: what it does and how it is laid out.")
        await run.session.run_turn("How are stock items modelled? Walk me through the models module.")
        session_id, before = run.session.session_id, len(run.model_requests)
        tokens = run.session.context.view().tokens

        switch = await run.session.switch_model("sim-large")
        assert run.session.model.id == "sim-large" and run.session.session_id == session_id
        change = run.session.ledger.tree.get(str(switch.entry_id))
        assert isinstance(change, ModelChangeEntry) and change.model == "sim-large"
        assert transcript_items(entry_events(change, {}))[0]["kind"] == "modelChange"
        assert switch.cost.tokens == tokens and switch.cost.switched > switch.cost.stayed > 0
        assert f"{tokens:,} tokens" in switch.note and "cache" in switch.note
        assert run.session.usage.snapshot().size == 200_000

        await run.session.run_turn("Where is the data persisted and in what format?")
        first, second = run.model_requests[before], run.model_requests[before + 1]
        assert first.model == "sim-large"
        # The same conversation, sent to the new model: its cache was empty (the note's
        # claim), and is read again from the next request on.
        previous = run.model_requests[before - 1].request["messages"]
        assert first.request["messages"][: len(previous) - 1] == previous[: len(previous) - 1]
        assert first.tokens.cache_read == 0 and first.tokens.cache_write > 0.8 * tokens
        assert second.tokens.cache_read > 0


async def test_a_switch_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no base URL the provider is the vendor's own API: only its models are served.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    agent = WorkspaceAgent(tmp_path, AgentSettings(
        provider="openai-responses", sessions_dir=str(tmp_path / "sessions")))
    session = agent.create()
    try:
        with pytest.raises(ConfigError, match="not served by the provider 'openai-responses'"):
            await session.switch_model("claude-haiku-4-5")
        with pytest.raises(UnknownModelError) as unknown:
            await session.switch_model("no-such-model")
        # It offers the provider's own models, not one the next try would be refused.
        offered = unknown.value.message.split("use one of ")[1].split(", or define")[0]
        assert "gpt-5.5" in offered and "claude-haiku-4-5" not in offered
        assert session.model.id == "gpt-5.5"
        assert not any(isinstance(e, ModelChangeEntry) for e in session.ledger.tree.entries[2:])
    finally:
        await agent.close()


async def test_a_base_url_serves_at_a_switch_what_it_serves_at_the_start(
    tmp_path: Path,
) -> None:
    # The session started on the simulator through a base URL; the switch takes a model of
    # another vendor there too, as starting with that model would, and the turn reaches it.
    async with agent_run(tmp_path) as run:
        await run.session.switch_model("claude-haiku-4-5")
        result = await run.session.run_turn("Where is the data persisted and in what format?")
        assert result.stop_reason == "end_turn"
        assert run.model_requests[-1].model == "claude-haiku-4-5"


def test_the_picker_lists_the_providers_models_the_users_first(tmp_path: Path) -> None:
    models_file = tmp_path / "models.json"
    models_file.write_text(
        '{"models": [{"id": "my-llama", "contextWindow": 8192, "maxOutput": 1024, '
        '"baseUrl": "http://localhost:11434/v1", "pricing": {"input": 0.1, "output": 0.2}}]}'
    )
    openai = model_choices(AgentSettings(provider="openai-chat", models_file=str(models_file)))
    assert openai[0].source == "user" and openai[0].model.id == "my-llama"
    assert {c.model.vendor for c in openai} == {"openai", "local"}
    listed = openai[0].to_json("my-llama")
    assert listed["current"] and listed["contextWindow"] == 8192 and listed["pricing"]["output"] == 0.2
    assert [c.model.id for c in choices("sim", ModelRegistry())] == ["sim-small", "sim-large"]
    assert all(c.model.vendor == "anthropic" for c in model_choices(AgentSettings()))


def test_the_note_says_when_the_new_window_means_a_compaction() -> None:
    small = ModelInfo("s", "Small", "sim", 32_768, 4_096)
    large = ModelInfo("l", "Large", "sim", 200_000, 16_384)
    cost = switch_cost(30_000, large, small, cache_retention="short", settings=CompactionSettings())
    assert cost.compacts and cost.threshold < 30_000
    assert "summarised before the next request" in switch_note(large, small, cost, "short")
    off = switch_cost(30_000, small, large, cache_retention="none", settings=CompactionSettings())
    assert "caching is off" in switch_note(small, large, off, "none")


async def test_a_reopened_session_keeps_its_model_and_settings_changes_keep_choices(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_sample_workspace(workspace)
    async with SimServer(Simulator()) as server:
        settings = AgentSettings(
            provider="sim", base_url=server.base_url, sessions_dir=str(tmp_path / "s")
        )
        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        session = agent.create()
        await session.run_turn("hello")
        await session.switch_model("sim-large")
        session.set_mode("allowAll")
        # Another setting changes: the session's own choices stay.
        agent.update_settings(settings.with_overrides(bash_timeout=30.0))
        await session.run_turn("again")
        assert session.model.id == "sim-large" and session.mode == "allowAll"
        await agent.close()

        agent = WorkspaceAgent(workspace, settings, retry=FAST_RETRY)
        reopened = agent.open(session.session_id)
        assert reopened.model.id == "sim-large"
        # The model setting itself changes: it applies, from the next turn.
        agent.update_settings(settings.with_overrides(model="sim-small"))
        await reopened.run_turn("and now")
        assert reopened.model.id == "sim-small"
        await agent.close()


async def test_a_mode_switch_applies_to_the_next_tool_call(tmp_path: Path) -> None:
    scenario = {
        "name": "mode",
        "turns": [
            {
                "user": "write it",
                "steps": [
                    {"tools": [{"name": "write", "arguments": {"path": "a.txt", "content": "a"}}]},
                    {"text": "Done."},
                ],
            }
        ],
    }
    asked: list[str] = []

    async def ask(request: PermissionRequest) -> str | None:
        asked.append(request.title)
        return "allow_once"

    async with agent_run(tmp_path, scenario=scenario, settings=AgentSettings()) as run:
        run.session.attach(run.events.append, ask)
        assert run.session.mode == "allowReads"
        await run.session.run_turn("write it")
        assert len(asked) == 1
        run.session.set_mode("allowAll")
        await run.session.run_turn("write it")
        assert len(asked) == 1  # not asked
        with pytest.raises(ConfigError):
            run.session.set_mode("yolo")


async def test_writing_what_programs_outside_the_sandbox_act_on_asks_even_in_allow_all(
    tmp_path: Path,
) -> None:
    """Before: under allowAll the write and edit tools changed `.git/hooks`, `.git/config`
    and `.vscode/tasks.json` unasked, which the sandbox keeps commands from doing (a hook
    runs at the user's next commit, outside any sandbox)."""
    writes = [
        (".git/hooks/pre-commit", "#!/bin/sh\nid\n"),
        (".vscode/tasks.json", "{}"),
        ("g/hooks/post-merge", "#!/bin/sh\nid\n"),  # through a link to .git
        ("vendor/lib/.git/hooks/pre-push", "#!/bin/sh\nid\n"),  # a nested repository's
        ("src/app.py", "x = 1\n"),
    ]
    scenario = {
        "name": "protected",
        "turns": [
            {
                "user": "write them",
                "steps": [
                    {"tools": [{"name": "write", "arguments": {"path": p, "content": c}}]}
                    for p, c in writes
                ] + [{"text": "Done."}],
            }
        ],
    }
    asked: list[str] = []

    async def ask(request: PermissionRequest) -> str | None:
        asked.append(request.title)
        return "reject_once"

    async with agent_run(tmp_path, scenario=scenario) as run:
        (run.session.workspace / ".git" / "hooks").mkdir(parents=True)
        (run.session.workspace / "g").symlink_to(".git")
        run.session.attach(run.events.append, ask)
        assert run.session.mode == "allowAll"
        await run.session.run_turn("write them")
        assert len(asked) == 4, asked
        assert ".git/hooks/pre-commit is acted on outside any sandbox" in asked[0]
        assert ".vscode/tasks.json" in asked[1]
        assert ".git/hooks/post-merge is acted on" in asked[2]
        assert "vendor/lib/.git/hooks/pre-push is acted on" in asked[3]
        workspace = run.session.workspace
        assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
        assert not (workspace / ".vscode" / "tasks.json").exists()
        assert not (workspace / "vendor" / "lib" / ".git" / "hooks" / "pre-push").exists()
        assert (workspace / "src" / "app.py").read_text() == "x = 1\n"  # not asked


async def test_switching_back_while_the_cache_is_warm_says_it_is_read_not_rewritten(
    tmp_path: Path,
) -> None:
    async with agent_run(tmp_path) as run:
        await run.session.run_turn("Give me an overview of this repository: what it does and how it is laid out.")
        await run.session.switch_model("sim-large")
        await run.session.run_turn("How are stock items modelled? Walk me through the models module.")
        back = await run.session.switch_model("sim-small")
        assert back.cost.warm > 0
        assert back.note.startswith("Switched back to")
        assert f"{back.cost.warm:,}" in back.note
        before = len(run.model_requests)
        await run.session.run_turn("Where is the data persisted and in what format?")
        first = run.model_requests[before]
        assert first.model == "sim-small"
        # What the note promised is what the provider billed: the warm part read, the rest
        # written.
        assert first.tokens.cache_read == back.cost.warm
        assert first.tokens.cache_read + first.tokens.cache_write + first.tokens.input >= back.cost.tokens * 0.9
