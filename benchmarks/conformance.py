"""The outside check: compaction-conformance-kit 0.8.0 (PyPI, MIT) drives the product's own
compaction as one of its compactors.

The kit plants 20 typed canaries (safety rules, hard constraints, facts, goal state, user
preferences) in a scripted 50-turn conversation, calls a compactor five times, each round on
the previous round's output, and probes what survives, by type, per round. Its probes are its
own (every required token of a canary must be in the compacted text).

`ProductCompactor` is the product's pipeline end to end, nothing re-implemented: an
`AgentSession` (the product's turn loop, ledger and context manager) holds the kit's
conversation, played turn by turn against the simulator (each user turn answered with the
kit's own assistant text); each round is the product's manual compaction (`/compact`: its cut
point, its summary request, the fold of the previous summary), answered by the simulator's
summariser in the mode given (faithful or lossy); the compacted text is what the model sees
after it (the summary message and the turns kept verbatim, serialised as the product
serialises a conversation). Two ways to chain the rounds, both reported:

- `between_rounds=0`, the kit's protocol taken literally (`/compact` five times in a row):
  after the first round the product's cut point finds nothing new to fold (the same two turns
  are kept) and the compaction is a no-op, so rounds 2-5 see the context of round 1;
- `between_rounds=2`: the conversation goes on for two turns of filler (no canary) before
  each later round, as in a session that compacts more than once, so that every round folds
  the previous summary and the previous kept tail into a new summary.

A third summariser keeps 300 characters (`SHORT_SUMMARY_CHARS`: the faithful summary cut at
the last line break within them, `Simulator(summary_chars=...)`), the short summariser issue
26 quotes. `agent-server bench conformance` prints the survival by type and round for each,
with the kit's reference compactors beside them.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_server.agent.settings import AgentSettings
from agent_server.context.summary_prompt import serialize_conversation
from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.summary import SUMMARY_MODES, SummaryMode
from benchmarks.cost_bench import open_session

KIT = "compaction-conformance-kit==0.8.0"
MODEL = "sim-small"
ROUNDS = 5
FILLER_BETWEEN_ROUNDS = 2
SHORT_SUMMARY_CHARS = 300
_FILLER = ("Let's keep going with the next part of the plan.",
           "Fine, continue with what is left.", "Go on with the remaining work.",
           "Carry on where we were.", "Next item, please.", "Keep going.",
           "Continue with the following step.", "On to the next one.")
_ACK = "Acknowledged. Continuing with the plan."


def _kit() -> Any:
    try:
        import compaction_kit
    except ImportError as exc:
        raise SystemExit(f"agent-server bench conformance needs {KIT}: pip install '{KIT}'"
                         ) from exc
    return compaction_kit


class ProductCompactor:
    """The product's compaction as a compactor of the kit (its `compact(turns, round_num)`
    protocol), answered by the simulator's summariser in `mode`."""

    def __init__(self, mode: SummaryMode, between_rounds: int = FILLER_BETWEEN_ROUNDS,
                 summary_chars: int | None = None) -> None:
        self.mode = mode
        self.between_rounds = between_rounds
        self.summary_chars = summary_chars
        kept = f" cut to {summary_chars} characters" if summary_chars else ""
        self.name = (f"agent-server, {mode} summariser{kept}, {between_rounds} turns between "
                     "rounds")
        self._loop = asyncio.new_event_loop()
        self._root = Path(tempfile.mkdtemp(prefix="conformance-"))
        self._session: Any = None
        self._server: Any = None
        self._simulator: Simulator | None = None
        self._last = ""
        self._fillers = 0

    def compact(self, turns: list[Any], round_num: int = 1,
                budget_chars: int | None = None) -> Any:
        kit = _kit()
        if round_num == 1:
            self._start(turns)
            prompts = [t.text for t in turns if t.role == "user"]
        else:
            if len(turns) != 1 or turns[0].text != self._last:
                raise ValueError("round > 1 must compact the previous round's output")
            prompts = [self._filler() for _ in range(self.between_rounds)]
        text = self._loop.run_until_complete(self._round(prompts))
        self._last = text
        return kit.CompactedContext(text=text, compactor_name=self.name, round_num=round_num)

    def _filler(self) -> str:
        self._fillers += 1
        return f"{_FILLER[self._fillers % len(_FILLER)]} (step {self._fillers})"

    def _start(self, turns: Sequence[Any]) -> None:
        """A session and a simulator whose scenario answers each of the kit's user turns with
        the kit's assistant text that follows it (and the filler turns with the kit's own
        acknowledgement)."""
        answers: dict[str, str] = {}
        for index, turn in enumerate(turns):
            if turn.role == "user":
                reply = next((t.text for t in turns[index + 1:] if t.role == "assistant"), _ACK)
                answers.setdefault(turn.text, reply)
        fillers = [f"{_FILLER[(i + 1) % len(_FILLER)]} (step {i + 1})"
                   for i in range(FILLER_BETWEEN_ROUNDS * ROUNDS * 2)]
        answers.update(dict.fromkeys(fillers, _ACK))
        scenario = parse_scenario({"name": "conformance", "turns": [
            {"user": prompt, "steps": [{"text": reply}]} for prompt, reply in answers.items()
        ]})
        self._simulator = Simulator(scenario=scenario, summariser=self.mode,
                                    summary_chars=self.summary_chars)
        self._server = SimServer(self._simulator).run_in_thread()
        workspace = self._root / "workspace"
        workspace.mkdir(parents=True)
        settings = AgentSettings(provider="sim", model=MODEL, base_url=self._server.base_url,
                                 permissions_mode="allowAll",
                                 sessions_dir=str(self._root / "sessions"))
        self._session = open_session(workspace, settings, None)

    async def _round(self, prompts: Sequence[str]) -> str:
        for prompt in prompts:
            result = await self._session.run_turn(prompt)
            if result.stop_reason != "end_turn":
                raise RuntimeError(f"the session stopped: {result.stop_reason}")
        result = await self._session.compact()
        if result.outcome == "noop" and self._last:
            return self._last  # nothing new to fold: the context stays as it was
        if result.outcome != "compacted":
            raise RuntimeError(f"the compaction did not happen: {result.outcome} "
                               f"{result.error or ''}")
        return serialize_conversation(result.view.projection.messages)

    def close(self) -> None:
        if self._session is not None:
            self._loop.run_until_complete(self._session.close())
        if self._server is not None:
            self._server.stop()
        self._loop.close()
        shutil.rmtree(self._root, ignore_errors=True)


def survival(run: Any) -> dict[str, list[float]]:
    """Per canary type, its survival in each round."""
    kit = _kit()
    return {ctype.value: run.survival_curve(ctype) for ctype in kit.CanaryType}


def run_all() -> list[dict[str, Any]]:
    """The product with each summariser, and the kit's own compactors beside it, five rounds
    each on the kit's seeded session."""
    kit = _kit()
    from compaction_kit.cli import COMPACTORS

    session = kit.build_seeded_session()
    results: list[dict[str, Any]] = []
    summarisers: list[tuple[SummaryMode, int | None]] = [(mode, None) for mode in SUMMARY_MODES]
    summarisers.append(("faithful", SHORT_SUMMARY_CHARS))
    for mode, chars in summarisers:
        for between in (0, FILLER_BETWEEN_ROUNDS):
            compactor = ProductCompactor(mode, between, chars)
            try:
                run = kit.run_conformance(session, compactor, rounds=ROUNDS)
            finally:
                compactor.close()
            results.append(_result(compactor.name, run))
    for name, factory in COMPACTORS.items():
        results.append(_result(name, kit.run_conformance(session, factory(), rounds=ROUNDS)))
    return results


def _result(name: str, run: Any) -> dict[str, Any]:
    last = run.rounds[-1]
    return {
        "compactor": name,
        "survival": survival(run),
        "survived_after_last_round": sum(last.survived.values()),
        "canaries": len(last.survived),
        "mean_survival": sum(sum(r.survived.values()) / len(r.survived) for r in run.rounds)
        / len(run.rounds),
        "last_text_chars": len(last.context.text),
    }


def main(json_path: Path | None = None, out_dir: Path | None = None) -> int:
    from benchmarks.report import print_conformance

    results = run_all()
    if json_path is not None:
        json_path.write_text(json.dumps(results, indent=2), encoding="utf-8")
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "conformance.json").write_text(json.dumps(results, indent=2),
                                                  encoding="utf-8")
    print_conformance(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
