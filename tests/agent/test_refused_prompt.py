"""A prompt refused unsent (too large for the window even alone) is not the session's title
and not one of its prompts: the session list shows what was actually asked."""

from __future__ import annotations

from pathlib import Path

from agent_server.session.facts import facts_of
from agent_server.session.meta import MetaFold
from tests.agent.conftest import agent_run

HUGE = "lorem ipsum dolor sit amet " * 8000  # ~40k tokens: larger than sim-small's window


async def test_a_refused_prompt_is_neither_title_nor_prompt(tmp_path: Path) -> None:
    async with agent_run(tmp_path) as run:
        refused = await run.session.run_turn(HUGE)
        assert refused.stop_reason == "error"
        ledger = run.session.ledger
        assert ledger.facts.title is None
        assert ledger.facts.meta.prompt_count == 0 and ledger.facts.meta.first_prompt is None

        answered = await run.session.run_turn("What is in this repository?")
        assert answered.stop_reason == "end_turn"
        assert ledger.facts.title == "What is in this repository?"
        assert ledger.facts.meta.prompt_count == 1
        assert ledger.facts.meta.first_prompt == "What is in this repository?"

        # A fold of the file from its start (as the store rebuilds a sidecar) agrees.
        fold = MetaFold.start(ledger.header)
        for entry in ledger.tree.entries:
            fold.add(facts_of(entry))
        assert (fold.title, fold.prompt_count, fold.first_prompt) == (
            "What is in this repository?", 1, "What is in this repository?"
        )
