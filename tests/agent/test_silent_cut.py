"""A local server that cuts a prompt longer than its context from the start without an error
(Ollama past its `num_ctx`) and reports the cut size: the session says so once, with what to
do (tests against the simulator's `numctx` fault, which answers as Ollama does)."""

from __future__ import annotations

from pathlib import Path

from agent_server.agent import events
from tests.agent.test_server_window import local_server

# About 16k tokens: well within the window agent-server was told (32768), past a num_ctx of 4096.
LONG_PROMPT = "read this: " + "lorem ipsum dolor " * 3500


def cut_notices(seen: list[events.AgentEvent]) -> list[events.Notice]:
    return [e for e in seen if isinstance(e, events.Notice) and "cut the start" in e.message]


async def test_a_server_that_cut_the_prompt_silently_is_told_once(tmp_path: Path) -> None:
    async with local_server(tmp_path, faults="numctx%1:4096") as (session, seen, simulator):
        first = await session.run_turn(LONG_PROMPT)
        second = await session.run_turn("and now?")
    assert first.error is None and second.error is None  # the answers are kept
    reported = [r.usage["prompt_tokens"] for r in simulator.records if r.usage]
    assert len(reported) >= 2 and set(reported) == {4096}
    [notice] = cut_notices(seen)  # once per session, though every answer was cut
    assert notice.level == "warning"
    assert "The server says it read 4,096 prompt tokens of a request of at least" in notice.message
    assert "has not seen the system prompt or the first messages" in notice.message
    assert "OLLAMA_CONTEXT_LENGTH or num_ctx" in notice.message
    assert "llama.cpp: -c" in notice.message and "vLLM: --max-model-len" in notice.message
    assert "set 'contextWindow' to it" in notice.message
    # Nothing compacted for it (that would not help).
    assert not [e for e in seen if isinstance(e, events.CompactionStarted)]


async def test_a_server_that_read_the_whole_prompt_is_not_suspected(tmp_path: Path) -> None:
    async with local_server(tmp_path) as (session, seen, simulator):
        result = await session.run_turn(LONG_PROMPT)
    assert result.error is None
    reported = [r.usage["prompt_tokens"] for r in simulator.records if r.usage]
    assert reported and min(reported) > 4096
    assert cut_notices(seen) == []


async def test_a_short_prompt_under_num_ctx_is_not_suspected(tmp_path: Path) -> None:
    async with local_server(tmp_path, faults="numctx%1:4096") as (session, seen, _simulator):
        result = await session.run_turn("hi")
    assert result.error is None
    assert cut_notices(seen) == []
