"""Issue 45's Goal counted over `bench recall` rows (benchmarks/recall_goal.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.recall_goal import checks, main, summary_lines


def row(client: str, cost: float, *, session: str = "s", model: str = "sim-small",
        summaries: int = 0, recoveries: int = 0, recovery_cost: float = 0.0,
        violations: int = 0, failed_turns: int = 0) -> dict[str, Any]:
    return {"client": client, "session": session, "model": model, "summariser": "lossy",
            "strategy": "default", "cost": cost, "summaries": summaries,
            "failed_turns": failed_turns,
            "recall": {"recoveries": recoveries, "recovery_cost": recovery_cost,
                       "violations": {"rule": violations, "lost": 0}}}


def test_the_bill_limit_is_the_tighter_one_when_any_client_compacts() -> None:
    quiet = checks([row("agent-server", 0.90), row("pi", 1.0), row("codex", 1.2)])
    assert [(c.compacts, c.limit, c.bill_met) for c in quiet] == [(False, 0.92, True)]
    peer_compacts = checks([row("agent-server", 0.90), row("pi", 1.0),
                            row("codex", 1.2, summaries=2)])
    assert [(c.compacts, c.bill_met) for c in peer_compacts] == [(True, False)]
    we_compact = checks([row("agent-server", 0.84, summaries=1), row("pi", 1.0)])
    assert [(c.compacts, c.bill_met) for c in we_compact] == [(True, True)]


def test_a_peer_with_a_failed_turn_is_neither_the_cheapest_nor_the_best() -> None:
    (check,) = checks([row("agent-server", 0.5, recoveries=3),
                       row("claude-code", 0.1, recoveries=0, failed_turns=1),
                       row("pi", 1.0, recoveries=3, recovery_cost=0.01)])
    assert (check.cheapest_client, check.ratio, check.best_recoveries) == ("pi", 0.5, 3)
    alone = checks([row("agent-server", 0.5), row("codex", 0.1, failed_turns=2)])
    assert alone == []  # no finished peer: not counted


def test_recoveries_are_checked_by_count_then_by_their_cost() -> None:
    # The fewest and the cheapest are each the best any finished peer did, apart.
    (apart,) = checks([row("pi", 1.0, recoveries=1, recovery_cost=0.03),
                       row("codex", 1.0, recoveries=4, recovery_cost=0.02),
                       row("agent-server", 0.5, recoveries=1, recovery_cost=0.025)])
    assert (apart.best_recoveries, apart.best_recovery_cost) == (1, 0.02)
    assert (apart.recoveries_met, apart.recovery_cost_met) == (True, False)
    rows = [row("pi", 1.0, recoveries=2, recovery_cost=0.02),
            row("codex", 1.0, recoveries=2, recovery_cost=0.01),
            row("agent-server", 0.5, recoveries=2, recovery_cost=0.015),
            row("agent-server-anthropic", 0.5, recoveries=1, recovery_cost=0.005),
            row("agent-server", 0.5, recoveries=3, session="t"),
            row("pi", 1.0, recoveries=2, session="t")]
    found = {(c.run[0], c.client): c for c in checks(rows)}
    same = found["s", "agent-server"]  # as few as the best, but dearer than Codex's
    assert same.best_recovery_cost == 0.01
    assert (same.recoveries_met, same.recovery_cost_met) == (True, False)
    fewer = found["s", "agent-server-anthropic"]
    assert (fewer.recoveries_met, fewer.recovery_cost_met) == (True, True)
    more = found["t", "agent-server"]
    assert (more.recoveries_met, more.recovery_cost_met) == (False, False)


def test_the_summary_counts_each_criterion_client_by_client() -> None:
    rows = [row("pi", 1.0, summaries=1, recoveries=1), row("pi", 1.0, session="t"),
            row("agent-server", 0.8, recoveries=1), row("agent-server", 0.8, session="t",
                                                           violations=1)]
    (line,) = summary_lines(checks(rows))
    assert line == ("agent-server: no violation 1 of 2; bill ≤0.85x where any compacts 1 of 1, "
                    "≤0.92x where none does 1 of 1; recoveries ≤ the best peer's 2 of 2, and "
                    "their cost too 2 of 2")


def test_a_later_file_replaces_an_earlier_runs_row(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps([row("pi", 1.0), row("agent-server", 0.95)]), "utf-8")
    second.write_text(json.dumps([row("agent-server", 0.90)]), "utf-8")
    assert main([str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert "$0.900 0.900x pi (≤0.92)" in out and "0.950" not in out
    assert out.rstrip().endswith("and their cost too 1 of 1")
    assert main([]) == 2
