"""Fault injection: which model requests fail, and how.

The spec is a comma-separated list of rules:

    RULE  := KIND '@' WHEN [':' PARAM]      by request index (1-based)
           | KIND '%' RATE [':' PARAM]      at random, with probability RATE (0..1)
           | 'seed=' INT                    the random generator's seed (default 0)
    WHEN  := N | N '-' M                    one index, or an inclusive range
    KIND  := 429 | 529 | 500 | 401 | 403 | drop | slow | overflow | toolarge | pause | numctx

- `429`: rate limited, with a `retry-after` header of PARAM seconds (default 1);
- `401`, `403`: the key is refused, or may not use the model (each API's own body);
- `529`: overloaded (Anthropic `overloaded_error`; the OpenAI APIs answer 503);
- `500`: internal server error;
  (for 529 and 500, PARAM, when given, is sent as `retry-after`)
- `drop`: the connection is cut after PARAM events of a stream (default 3), or halfway through
  a non-streamed body: the client sees a broken response, never a clean end;
- `slow`: the first byte comes PARAM seconds late (required); combines with any other fault;
- `overflow`: the prompt is rejected as too long, in the provider's own words;
- `toolarge`: the OpenAI APIs refuse the request as larger than the account's tokens-per-minute
  limit (429 "Request too large ... (TPM): Limit PARAM, Requested N", PARAM default 6000);
  Anthropic has no such refusal, and the Messages API answers normally;
- `pause`: the Anthropic answer stops with `pause_turn` before its tool calls (a long-running
  turn the API paused); the OpenAI APIs, which have no such stop, answer normally;
- `numctx`: Chat Completions answers as Ollama does with a context of PARAM tokens (its
  `num_ctx`, default 4096): a longer prompt is cut from the start without an error, answered,
  and its usage reports the cut size (PARAM prompt tokens, none cached); the other APIs answer
  normally.

Indices count model requests (messages, chat completions, responses; not count_tokens, models
or `/_sim`) since the plan was installed. Example: `429@3,drop@5,slow@2:1.5,500%0.1,seed=7`.
When several rules match one request, `slow` adds its delay and the first other rule wins.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

FaultKind: TypeAlias = Literal[
    "429", "529", "500", "401", "403", "drop", "slow", "overflow", "toolarge", "pause",
    "numctx",
]
FAULT_KINDS: tuple[FaultKind, ...] = (
    "429", "529", "500", "401", "403", "drop", "slow", "overflow", "toolarge", "pause",
    "numctx",
)

_RULE = re.compile(
    r"^(?P<kind>[a-z0-9]+)"
    r"(?:@(?P<first>\d+)(?:-(?P<last>\d+))?|%(?P<rate>\d*\.?\d+))"
    r"(?::(?P<param>\d*\.?\d+))?$"
)
_DEFAULT_PARAM: dict[str, float | None] = {
    "429": 1.0,
    "529": None,
    "500": None,
    "401": None,
    "403": None,
    "drop": 3.0,
    "slow": None,
    "overflow": None,
    "toolarge": 6000.0,
    "pause": None,
    "numctx": 4096.0,
}


class FaultSpecError(ValueError):
    """A fault spec that does not parse; the message shows the grammar."""


@dataclass(frozen=True, slots=True)
class FaultRule:
    kind: FaultKind
    first: int | None = None  # request index range (1-based, inclusive)
    last: int | None = None
    rate: float | None = None  # or a probability per request
    param: float | None = None

    def describe(self) -> str:
        where = f"%{self.rate:g}" if self.rate is not None else (
            f"@{self.first}" if self.first == self.last else f"@{self.first}-{self.last}"
        )
        param = f":{self.param:g}" if self.param is not None else ""
        return f"{self.kind}{where}{param}"


@dataclass(frozen=True, slots=True)
class FaultPlan:
    rules: tuple[FaultRule, ...] = ()
    seed: int = 0

    @property
    def spec(self) -> str:
        parts = [rule.describe() for rule in self.rules]
        if self.seed:
            parts.append(f"seed={self.seed}")
        return ",".join(parts)


@dataclass(frozen=True, slots=True)
class Fault:
    """What happens to one request."""

    kind: FaultKind
    param: float | None = None

    def describe(self) -> str:
        return self.kind if self.param is None else f"{self.kind}:{self.param:g}"


@dataclass(frozen=True, slots=True)
class FaultDecision:
    index: int  # the request's 1-based index under the current plan
    fault: Fault | None = None  # 429, 529, 500, drop or overflow
    delay: float = 0.0  # seconds before the first byte

    def describe(self) -> str | None:
        parts = []
        if self.delay:
            parts.append(f"slow:{self.delay:g}")
        if self.fault is not None:
            parts.append(self.fault.describe())
        return ",".join(parts) or None


def parse_faults(spec: str | None) -> FaultPlan:
    """The plan a spec string describes; an empty or missing spec is the empty plan."""
    if spec is None or not spec.strip():
        return FaultPlan()
    rules: list[FaultRule] = []
    seed = 0
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        if item.startswith("seed="):
            try:
                seed = int(item[5:])
            except ValueError:
                raise FaultSpecError(f"fault spec {spec!r}: seed must be an integer") from None
            continue
        rules.append(_parse_rule(item, spec))
    return FaultPlan(rules=tuple(rules), seed=seed)


def _parse_rule(item: str, spec: str) -> FaultRule:
    grammar = (
        "expected KIND@N, KIND@N-M or KIND%RATE, optionally :PARAM, with KIND one of "
        + ", ".join(FAULT_KINDS)
        + " (e.g. 429@3,drop@5,slow@2:1.5,500%0.1,seed=7)"
    )
    match = _RULE.match(item)
    if match is None:
        raise FaultSpecError(f"fault spec {spec!r}: cannot read {item!r}; {grammar}")
    if match["kind"] not in FAULT_KINDS:
        raise FaultSpecError(f"fault spec {spec!r}: unknown fault {match['kind']!r}; {grammar}")
    kind = cast(FaultKind, match["kind"])
    param = float(match["param"]) if match["param"] is not None else _DEFAULT_PARAM[kind]
    if kind == "slow" and param is None:
        raise FaultSpecError(f"fault spec {spec!r}: {item!r} needs a delay, e.g. slow@2:1.5")
    if match["rate"] is not None:
        rate = float(match["rate"])
        if not 0.0 <= rate <= 1.0:
            raise FaultSpecError(f"fault spec {spec!r}: rate in {item!r} must be within 0..1")
        return FaultRule(kind=kind, rate=rate, param=param)
    first = int(match["first"])
    last = int(match["last"]) if match["last"] is not None else first
    if first < 1 or last < first:
        raise FaultSpecError(f"fault spec {spec!r}: indices in {item!r} start at 1, N <= M")
    return FaultRule(kind=kind, first=first, last=last, param=param)


class FaultInjector:
    """Counts model requests and decides each one's fault under the installed plan."""

    def __init__(self, plan: FaultPlan | None = None) -> None:
        self.install(plan or FaultPlan())

    def install(self, plan: FaultPlan) -> None:
        """Use `plan` from now on; request indices start again at 1."""
        self.plan = plan
        self._count = 0
        self._random = random.Random(plan.seed)

    def next_request(self) -> FaultDecision:
        self._count += 1
        index = self._count
        fault: Fault | None = None
        delay = 0.0
        for rule in self.plan.rules:
            if rule.rate is not None:
                # Draw for every rate rule on every request, so that one rule's outcome does
                # not shift the random sequence another rule sees.
                hit = self._random.random() < rule.rate
            else:
                first = rule.first if rule.first is not None else 0
                last = rule.last if rule.last is not None else first
                hit = first <= index <= last
            if not hit:
                continue
            if rule.kind == "slow":
                delay += rule.param or 0.0
            elif fault is None:
                fault = Fault(kind=rule.kind, param=rule.param)
        return FaultDecision(index=index, fault=fault, delay=delay)
