"""Issue 45's Goal, counted over `bench recall` runs: agent-server's against its peers'.

    python -m benchmarks.recall_goal RUNS.json [RUNS.json ...]

The files are `bench recall --json` outputs; the peers' runs take hours, so they are usually
made apart from ours and given here together. A run is a session, a window and a summariser;
a later file's row replaces an earlier one's for the same run and client. For each of
agent-server's runs (both APIs), against the peers' runs that finished every turn (a peer
with a failed turn is left out, as `bench recall`'s "× cheapest peer" leaves it out):

- **violations**: none of any kind (rule, request, decision, failed approach, lost fact);
- **bill**: at most 0.85x the cheapest peer's where any client compacts (one of those peers,
  or this client), at most 0.92x where none does;
- **recoveries**: at most as many as the peer that needed the fewest, and **with their
  cost**: also costing at most what the peer whose recoveries cost the least paid for them
  (the two best peers may differ; both bounds hold at once).

A run no finished peer ran is not counted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The Goal's limits on the bill, over the cheapest peer's.
COMPACTING_LIMIT = 0.85
QUIET_LIMIT = 0.92
OURS = "agent-server"
USAGE = "python -m benchmarks.recall_goal RUNS.json [RUNS.json ...]"

Run = tuple[str, str, str]  # session, window (model), summariser


@dataclass(frozen=True, slots=True)
class Check:
    """One of agent-server's runs against its peers' in the same run."""

    run: Run
    client: str
    cost: float
    cheapest: float
    cheapest_client: str
    compacts: bool
    recoveries: int
    recovery_cost: float
    best_recoveries: int
    best_recovery_cost: float
    violations: int

    @property
    def ratio(self) -> float:
        return self.cost / self.cheapest

    @property
    def limit(self) -> float:
        return COMPACTING_LIMIT if self.compacts else QUIET_LIMIT

    @property
    def bill_met(self) -> bool:
        return self.ratio <= self.limit

    @property
    def recoveries_met(self) -> bool:
        return self.recoveries <= self.best_recoveries

    @property
    def recovery_cost_met(self) -> bool:
        return self.recoveries_met and self.recovery_cost <= self.best_recovery_cost + 1e-9


def checks(rows: Iterable[Mapping[str, Any]]) -> list[Check]:
    """Each of agent-server's runs in `rows` (`bench recall --json` rows) that a peer finished,
    checked against the Goal."""
    latest: dict[tuple[Run, str], Mapping[str, Any]] = {}
    for row in rows:
        latest[(row["session"], row["model"], row["summariser"]), _client(row)] = row
    found: list[Check] = []
    for (run, client), row in sorted(latest.items()):
        if not client.startswith(OURS):
            continue
        finished = [peer for (peer_run, name), peer in latest.items()
                    if peer_run == run and not name.startswith(OURS)
                    and peer["failed_turns"] == 0]
        if not finished:
            continue
        cheapest = min(finished, key=lambda peer: peer["cost"])
        found.append(Check(
            run=run, client=client, cost=row["cost"], cheapest=cheapest["cost"],
            cheapest_client=cheapest["client"],
            compacts=bool(row["summaries"]) or any(peer["summaries"] for peer in finished),
            recoveries=row["recall"]["recoveries"],
            recovery_cost=row["recall"]["recovery_cost"],
            best_recoveries=min(peer["recall"]["recoveries"] for peer in finished),
            best_recovery_cost=min(peer["recall"]["recovery_cost"] for peer in finished),
            violations=sum(row["recall"]["violations"].values()),
        ))
    return found


def _client(row: Mapping[str, Any]) -> str:
    strategy = row.get("strategy", "default")
    return row["client"] if strategy == "default" else f"{row['client']} ({strategy})"


def summary_lines(found: Sequence[Check]) -> list[str]:
    """The Goal's counts, client by client."""
    lines: list[str] = []
    for client in sorted({check.client for check in found}):
        mine = [check for check in found if check.client == client]
        compacting = [check for check in mine if check.compacts]
        quiet = [check for check in mine if not check.compacts]
        lines.append(
            f"{client}: no violation {_count(mine, lambda c: c.violations == 0)}; "
            f"bill ≤{COMPACTING_LIMIT}x where any compacts "
            f"{_count(compacting, lambda c: c.bill_met)}, ≤{QUIET_LIMIT}x where none does "
            f"{_count(quiet, lambda c: c.bill_met)}; recoveries ≤ the best peer's "
            f"{_count(mine, lambda c: c.recoveries_met)}, and their cost too "
            f"{_count(mine, lambda c: c.recovery_cost_met)}")
    return lines


def _count(found: Sequence[Check], met: Callable[[Check], bool]) -> str:
    return f"{sum(1 for check in found if met(check))} of {len(found)}"


def run_lines(found: Sequence[Check]) -> list[str]:
    """One line per run, a `!` after each criterion missed."""
    lines = []
    for check in found:
        session, window, summariser = check.run
        lines.append(
            f"{session:24} {window:9} {summariser:8} {check.client:24} "
            f"${check.cost:.3f} {check.ratio:.3f}x {check.cheapest_client} "
            f"(≤{check.limit}){'' if check.bill_met else ' !'}  "
            f"recoveries {check.recoveries} (${check.recovery_cost:.3f}) against "
            f"{check.best_recoveries} (${check.best_recovery_cost:.3f})"
            f"{'' if check.recoveries_met else ' !'}"
            f"{'' if check.recovery_cost_met or not check.recoveries_met else ' $!'}  "
            f"violations {check.violations}{'' if check.violations == 0 else ' !'}")
    return lines


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    rows: list[Mapping[str, Any]] = []
    for name in argv:
        rows.extend(json.loads(Path(name).read_text(encoding="utf-8")))
    found = checks(rows)
    print("\n".join([*run_lines(found), *summary_lines(found)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
