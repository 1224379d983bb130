"""The session's pinned rules and facts, and the task's plan: what a compaction carries
verbatim (context/carried.py) besides the user's own words.

Both live in the ledger (pin and plan entries) and are read back from it, so they are the
same after a restart, on every front end, and follow rewinds. This is where they change and
where each change is announced (`PinsChanged`, `PlanUpdated`). The user pins through the
session (`AgentSession.pin`: the editor's `agent/pins/add`, the terminal's `/remember`), the
model through the `remember` tool; the model writes the plan through the `plan` tool. A pin
is bounded when it is made (its own size, and all pins together within `pins_budget` of the
threshold), so that every pin can always be carried.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import cast

from agent_server.agent.events import EventSink, PinsChanged, PlanUpdated
from agent_server.context.carried import current_pins, current_plan, pins_budget
from agent_server.context.estimate import estimate_text_tokens
from agent_server.errors import PinError
from agent_server.session.entries import (
    PIN_KINDS,
    Pin,
    PinAuthor,
    PinEntry,
    PinKind,
    PlanEntry,
    PlanItem,
)
from agent_server.session.ledger import Ledger

MAX_PIN_CHARS = 2_000
PIN_NOTE = "pin"  # the kind of the note that tells the model of a pin the user changed


class SessionMemory:
    """Pins and plan of one session. `threshold` gives the compaction threshold in force
    (the pins' budget follows the model); `current_turn` the running turn's id, if any."""

    def __init__(
        self,
        ledger: Ledger,
        emit: EventSink,
        threshold: Callable[[], int],
        current_turn: Callable[[], str | None],
    ) -> None:
        self._ledger = ledger
        self._emit = emit
        self._threshold = threshold
        self._current_turn = current_turn

    def pins(self) -> tuple[Pin, ...]:
        return current_pins(self._ledger.tree.projection_entries())

    def plan(self) -> tuple[PlanItem, ...]:
        return current_plan(self._ledger.tree.projection_entries())

    def pin(self, kind: PinKind, text: str, by: PinAuthor) -> Pin:
        """Pin `text` for the session; raises PinError when it is empty, too long, already
        pinned, or would take the pins past their budget."""
        text = text.strip()
        if not text:
            raise PinError("Nothing to pin: the text is empty.")
        if len(text) > MAX_PIN_CHARS:
            raise PinError(
                f"A pin is at most {MAX_PIN_CHARS:,} characters ({len(text):,} given): pin "
                "the rule or fact itself, not the material around it."
            )
        pins = self.pins()
        if any(pin.text == text for pin in pins):
            raise PinError("That is pinned already.")
        budget = pins_budget(self._threshold())
        used = sum(estimate_text_tokens(pin.text) for pin in pins)
        if used + estimate_text_tokens(text) > budget:
            raise PinError(
                f"The pins would take more than their {budget:,} tokens (about {used:,} "
                "now): remove one first (/pins lists them)."
            )
        pin = Pin(secrets.token_hex(4), kind, text, by)
        self._ledger.add(PinEntry, pin.id, "add", pin.kind, pin.text, by)
        self._emit(PinsChanged(self._current_turn(), (*pins, pin)))
        return pin

    def unpin(self, pin_id: str, by: PinAuthor) -> Pin:
        """Remove the pin `pin_id` (or the only one its id starts with); raises PinError."""
        pins = self.pins()
        pin = find_pin(pins, pin_id)
        self._ledger.add(PinEntry, pin.id, "remove", pin.kind, pin.text, by)
        self._emit(PinsChanged(self._current_turn(), tuple(p for p in pins if p.id != pin.id)))
        return pin

    def set_plan(self, items: Sequence[PlanItem]) -> None:
        """The model's new plan (the whole list; the plan tool bounds it), recorded and
        announced."""
        self._ledger.add(PlanEntry, tuple(items))
        self._emit(PlanUpdated(self._current_turn(), tuple(items)))


def find_pin(pins: Sequence[Pin], pin_id: str) -> Pin:
    """The pin whose id is `pin_id`, or the only one whose id starts with it."""
    exact = [pin for pin in pins if pin.id == pin_id]
    matches = exact or [pin for pin in pins if pin_id and pin.id.startswith(pin_id)]
    if len(matches) != 1:
        known = ", ".join(pin.id for pin in pins) or "none"
        problem = "matches several pins" if matches else "is not a pin in force"
        raise PinError(f"{pin_id!r} {problem} (pins: {known}).")
    return matches[0]


def pin_argument(argument: str) -> tuple[PinKind, str]:
    """What `/remember` pins (the terminal's and ACP's): a fact when the text starts with
    `fact:`, else a rule (a leading `rule:` is dropped too)."""
    head, colon, rest = argument.partition(":")
    word = head.strip().lower()
    if colon and word in PIN_KINDS:
        return cast(PinKind, word), rest.strip()
    return "rule", argument.strip()
