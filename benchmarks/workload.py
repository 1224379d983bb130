"""The cost benchmark's workload: one deterministic coding session, and the files it reads.

`build_workload(size)` returns a `Workload`: a scenario (a dict for
`agent_server.sim.scenario.parse_scenario`) and the workspace it is written against
("tollgate", a rate-limiting gateway in Python, with its logs, quota records, hex dumps and
latency metrics). The real tools run against the real files, so every tool output is what
the agent would see; the simulator only plays the model.

The shape, for the full size (`FULL`), follows what long agent sessions look like:

- 40 turns of 3-7 tool steps each, about 240 model calls; some steps call 2-3 tools at once;
- tool outputs with a heavy tail: most a few hundred to 2k tokens (partial reads, greps,
  listings, short shell commands, edits), one in fifteen 10k-30k tokens (whole log windows,
  minified JSON records, hex dumps, CSV metrics: dense content the simulator's tokenizer
  counts at 1.8-2.7 characters per token, so the tools' 50 KB bound still gives 20-30k
  tokens);
- output about 1% of input: short remarks between tool calls, a longer answer at the end of
  each turn, and files written whole now and then.

Everything comes from one seeded `random.Random`, so two builds are identical, and so are
the tool outputs of two runs that start from a fresh copy of the workspace (edits and writes
change it; each run must start from `write()`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.agent.tools.output import MAX_BYTES
from agent_server.sim.tokenizer import count_tokens


@dataclass(frozen=True, slots=True)
class WorkloadSize:
    """How big a workload is, and the simulated model it runs on."""

    name: str
    turns: int
    model: str  # a simulator model: its window decides when the default compacts
    heavy_tokens: tuple[int, int]  # the heavy tail's tool outputs, in tokens
    heavy_every: int  # about one heavy output per this many tool calls
    write_tokens: tuple[int, int]  # files written whole (model output)
    answer_tokens: tuple[int, int]  # the answer that ends a turn
    remark_tokens: tuple[int, int]  # the text before a tool call
    steps: tuple[int, int] = (3, 7)  # tool steps per turn


FULL = WorkloadSize(
    "full",
    turns=40,
    model="sim-large",
    heavy_tokens=(10_000, 30_000),
    heavy_every=15,
    write_tokens=(2_000, 5_000),
    answer_tokens=(500, 2_500),
    remark_tokens=(100, 900),
)
QUICK = WorkloadSize(
    "quick",
    turns=12,
    model="sim-small",
    heavy_tokens=(3_000, 6_000),
    heavy_every=12,
    write_tokens=(500, 1_500),
    answer_tokens=(150, 500),
    remark_tokens=(20, 120),
)
TINY = WorkloadSize(
    "tiny",
    turns=5,
    model="sim-small",
    heavy_tokens=(3_000, 5_000),
    heavy_every=6,
    write_tokens=(300, 800),
    answer_tokens=(100, 300),
    remark_tokens=(20, 80),
    steps=(2, 4),
)
SIZES: Mapping[str, WorkloadSize] = {size.name: size for size in (FULL, QUICK, TINY)}


@dataclass(frozen=True, slots=True)
class Workload:
    size: WorkloadSize
    files: Mapping[str, str]  # path relative to the workspace root -> content
    scenario: Mapping[str, Any]  # for parse_scenario
    heavy_calls: int  # tool calls planned to return 10k+ (full) tokens

    @property
    def prompts(self) -> list[str]:
        return [turn["user"] for turn in self.scenario["turns"]]

    @property
    def idle_gaps(self) -> dict[int, float]:
        """Seconds the user is away before some turns (turn index -> seconds): three pauses
        longer than Anthropic's 5-minute cache lifetime, two shorter. The benchmark moves the
        simulator's clock by them, so caches expire as they would."""
        turns = len(self.scenario["turns"])
        pauses = (360.0, 120.0, 600.0, 120.0, 420.0)
        gaps: dict[int, float] = {}
        for k, seconds in enumerate(pauses, start=1):
            index = round(turns * k / (len(pauses) + 1))
            if 0 < index < turns:
                gaps[index] = seconds
        return gaps

    @property
    def model_calls(self) -> int:
        """Model calls the scenario plans (summaries aside)."""
        return sum(len(turn["steps"]) for turn in self.scenario["turns"])

    @property
    def tool_calls(self) -> int:
        return sum(
            len(step.get("tools", ())) for turn in self.scenario["turns"] for step in turn["steps"]
        )

    def write(self, dest: Path) -> None:
        """The workspace as the session starts: `dest` is created, files are overwritten."""
        for relative, text in self.files.items():
            path = dest / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def build_workload(size: WorkloadSize = FULL, seed: int = 2024) -> Workload:
    files = _workspace(random.Random(seed))
    planner = _Planner(random.Random(seed + 1), size, files)
    turns = [planner.turn(index) for index in range(size.turns)]
    return Workload(
        size=size,
        files=files,
        scenario={"name": f"tollgate-{size.name}", "turns": turns},
        heavy_calls=planner.heavy_calls,
    )


# --- the workspace --------------------------------------------------------------------------

MODULES = (
    "buckets", "quotas", "routes", "admission", "clock", "config",
    "metrics", "storage", "tenants", "audit", "replay", "cli",
)  # fmt: skip
_NOUNS = (
    "bucket", "quota", "route", "tenant", "window", "token", "burst", "lease", "shard",
    "policy", "grant", "replay", "record", "limit", "entry", "batch",
)  # fmt: skip
_VERBS = (
    "load", "check", "apply", "reset", "merge", "split", "refill", "expire", "record",
    "parse", "render", "select", "rotate", "drain", "verify", "admit", "charge", "trim",
)  # fmt: skip
_WORDS = (
    "the", "gateway", "admits", "each", "request", "when", "its", "tenant", "still", "has",
    "tokens", "left", "in", "current", "window", "and", "refills", "bucket", "at", "fixed",
    "rate", "so", "bursts", "are", "bounded", "by", "quota", "table", "which", "operators",
    "edit", "through", "cli", "while", "audit", "log", "keeps", "every", "change", "for",
    "later", "replay", "of", "traffic", "against", "new", "limits",
)  # fmt: skip
_ROUTES = (
    "/v1/orders", "/v1/orders/{id}", "/v1/items", "/v2/items", "/v2/search", "/v1/users/{id}",
    "/v1/payments", "/v2/quotes", "/v1/health", "/v2/exports", "/v1/webhooks", "/v2/batches",
)  # fmt: skip
_COMPONENTS = (
    "gateway.admit", "gateway.route", "buckets.refill", "quotas.load", "storage.flush",
    "audit.write", "replay.step", "tenants.sync", "metrics.push", "clock.skew",
)  # fmt: skip


def _prose(rng: random.Random, words: int) -> str:
    out: list[str] = []
    for index in range(words):
        word = rng.choice(_WORDS)
        out.append(word.capitalize() if index % 14 == 0 else word)
        if index % 14 == 13:
            out[-1] += "."
    return " ".join(out) + "."


def _constant(module: str, index: int) -> str:
    return f"{module.upper()}_LIMIT_{index}"


def _python_module(rng: random.Random, module: str, functions: int) -> str:
    cls = module.capitalize() + "State"
    lines = [
        f'"""tollgate.{module}: {_prose(rng, 16)}"""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "import time",
        "from dataclasses import dataclass, field",
        "",
        "log = logging.getLogger(__name__)",
        "",
    ]
    lines += [f"{_constant(module, i)} = {rng.randint(10, 990)}" for i in range(8)]
    lines += [
        "",
        "",
        "@dataclass",
        f"class {cls}:",
        f'    """{_prose(rng, 12)}"""',
        "",
        "    window_seconds: float = 60.0",
        "    capacity: int = 120",
        "    refill_per_second: float = 2.0",
    ]
    lines += [f"    {noun}s: dict[str, list[float]] = field(default_factory=dict)"
              for noun in rng.sample(_NOUNS, 4)]
    for index in range(functions):
        verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
        constant = _constant(module, rng.randrange(8))
        lines += [
            "",
            "",
            f"def {verb}_{noun}_{index}(state: {cls}, key: str, now: float) -> int:",
            f'    """{verb.capitalize()} the {noun} of `key` at `now`: {_prose(rng, 10)}"""',
            f"    window = state.window_seconds * {rng.randint(1, 9)}",
            f"    entries = state.{noun}s.get(key) if hasattr(state, '{noun}s') else None",
            "    if not entries:",
            f'        log.debug("{verb} {noun}: no entries for %s", key)',
            "        return 0",
            "    recent = [stamp for stamp in entries if stamp > now - window]",
        ]
        for _ in range(rng.randint(2, 8)):
            lines.append(
                rng.choice(
                    (
                        f"    spent = len(recent) * {rng.randint(1, 5)}",
                        f"    remaining = max(0, {constant} - len(recent))",
                        "    if len(recent) > state.capacity:",
                        f"        log.warning(\"{noun} over capacity for %s\", key)",
                        "    refill = (now - recent[0]) * state.refill_per_second / "
                        f"{rng.randint(2, 9)}",
                        f"    recent = recent[-{rng.randint(8, 64)}:]",
                        f"    state.{noun}s[key] = recent",
                        f"    started = time.monotonic()  # {_prose(rng, 5)}",
                    )
                )
            )
        lines.append(f"    return min(len(recent), {constant})")
    return "\n".join(lines) + "\n"


def _test_module(rng: random.Random, module: str, cases: int) -> str:
    lines = [
        f'"""Tests for tollgate.{module}."""',
        "",
        f"from tollgate.{module} import {module.capitalize()}State",
        "",
    ]
    for index in range(cases):
        noun = rng.choice(_NOUNS)
        lines += [
            "",
            f"def test_{noun}_{index}() -> None:",
            f"    state = {module.capitalize()}State(capacity={rng.randint(5, 500)})",
            f"    state.window_seconds = {rng.randint(1, 120)}.0",
            f"    assert state.capacity > {rng.randint(0, 4)}",
        ]
    return "\n".join(lines) + "\n"


def _log(rng: random.Random, lines: int) -> str:
    out = []
    second = 1_710_000_000
    for _ in range(lines):
        second += rng.randint(0, 3)
        hours, rest = divmod(second % 86_400, 3600)
        level = rng.choices(("INFO", "DEBUG", "WARN", "ERROR"), (70, 18, 9, 3))[0]
        out.append(
            f"2026-03-{14 + second // 86_400 % 14:02d}"
            f"T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}."
            f"{rng.randrange(1000):03d}Z {level:<5} {rng.choice(_COMPONENTS)} "
            f"route={rng.choice(_ROUTES)} tenant=t{rng.randrange(4000):04d} "
            f"key=k_{rng.getrandbits(24):06x} tokens={rng.randint(0, 120)}/120 "
            f"latency_ms={rng.uniform(0.2, 900):.1f} "
            f"status={rng.choice((200, 200, 200, 429, 503))} "
            f"trace={rng.getrandbits(64):016x}"
        )
    return "\n".join(out) + "\n"


def _quota_records(rng: random.Random, records: int) -> str:
    out = []
    for number in range(records):
        record = {
            "tenant": f"t{number:04d}",
            "plan": rng.choice(("free", "team", "business", "enterprise")),
            "routes": [
                {
                    "route": rng.choice(_ROUTES),
                    "limit": rng.randint(10, 5000),
                    "window": rng.choice((1, 10, 60, 3600)),
                    "burst": rng.randint(0, 200),
                    "overrides": [
                        {"day": day, "limit": rng.randint(5, 4000)}
                        for day in rng.sample(("mon", "tue", "wed", "thu", "fri", "sat", "sun"), 3)
                    ],
                }
                for _ in range(rng.randint(4, 6))
            ],
            "updated": f"2026-02-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
            "hash": f"{rng.getrandbits(128):032x}",
        }
        out.append(json.dumps(record, separators=(",", ":")))
    return "\n".join(out) + "\n"


def _hex_dump(rng: random.Random, lines: int) -> str:
    out = []
    for line in range(lines):
        data = bytes(rng.getrandbits(8) for _ in range(16))
        groups = " ".join(data[i : i + 2].hex() for i in range(0, 16, 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in data)
        out.append(f"{line * 16:08x}: {groups}  {text}")
    return "\n".join(out) + "\n"


def _metrics(rng: random.Random, rows: int) -> str:
    out = ["ts,tenant,route,status,latency_ms,tokens,limit,ratio"]
    stamp = 1_710_000_000
    for _ in range(rows):
        stamp += rng.randint(0, 2)
        tokens = rng.randint(0, 120)
        out.append(
            f"{stamp},t{rng.randrange(4000):04d},{rng.choice(_ROUTES)},"
            f"{rng.choice((200, 200, 429, 503))},{rng.uniform(0.2, 900):.1f},{tokens},120,"
            f"{tokens / 120:.3f}"
        )
    return "\n".join(out) + "\n"


def _workspace(rng: random.Random) -> dict[str, str]:
    files: dict[str, str] = {
        "README.md": "# tollgate\n\n" + "\n\n".join(_prose(rng, 60) for _ in range(8)) + "\n",
        "pyproject.toml": (
            '[project]\nname = "tollgate"\nversion = "0.4.0"\nrequires-python = ">=3.11"\n'
        ),
        "docs/design.md": "# Design\n\n" + "\n\n".join(_prose(rng, 80) for _ in range(12)) + "\n",
    }
    for module in MODULES:
        files[f"src/tollgate/{module}.py"] = _python_module(rng, module, rng.randint(6, 16))
    for module in MODULES[:6]:
        files[f"tests/test_{module}.py"] = _test_module(rng, module, rng.randint(8, 20))
    files["logs/gateway.log"] = _log(rng, 8000)
    files["data/quotas.jsonl"] = _quota_records(rng, 300)
    for index in range(4):
        files[f"dumps/segment-{index:02d}.hex"] = _hex_dump(rng, 1200)
    files["metrics/latency.csv"] = _metrics(rng, 4000)
    return files


# --- the scenario ---------------------------------------------------------------------------

_TASKS = (
    "Why does the burst limit in {module} reset too early under load?",
    "Walk me through how {module} decides whether a request is admitted.",
    "Tenants report spurious 429s; check whether {module} is involved.",
    "Tighten the limits in {module} and keep the tests passing.",
    "Find where {module} reads the quota table and explain the format.",
    "The replay of yesterday's traffic disagrees with production; look at {module}.",
    "Add a regression test for the refill bug we found in {module}.",
    "Write a short note on how {module} interacts with the audit log.",
    "Is there dead code in {module}? Clean it up if so.",
    "Check the latency metrics for routes handled by {module}.",
)


@dataclass
class _Planner:
    """Plans the turns; tracks the files as edits and writes change them."""

    rng: random.Random
    size: WorkloadSize
    files: dict[str, str]
    heavy_calls: int = 0
    tool_calls: int = 0
    edited: set[str] = field(default_factory=set)
    written: list[str] = field(default_factory=list)

    def turn(self, index: int) -> dict[str, Any]:
        module = MODULES[index % len(MODULES)]
        task = _TASKS[(index * 7) % len(_TASKS)].format(module=f"{module}.py")
        prompt = f"{task} (ticket TG-{101 + index})"
        steps: list[dict[str, Any]] = []
        count = self.rng.randint(*self.size.steps)
        for position in range(count):
            calls = 1 if self.rng.random() < 0.8 else self.rng.randint(2, 3)
            tools = [self._call(module, position, count) for _ in range(calls)]
            step: dict[str, Any] = {"tools": tools}
            remark = self.rng.randint(*self.size.remark_tokens)
            step["text"] = f"Next: {tools[0]['name']} for {module}."
            step["textTokens"] = remark
            steps.append(step)
        steps.append(
            {
                "text": f"Here is what I found about {module}.py for TG-{101 + index}.",
                "textTokens": self.rng.randint(*self.size.answer_tokens),
            }
        )
        return {"user": prompt, "steps": steps}

    def _call(self, module: str, position: int, count: int) -> dict[str, Any]:
        self.tool_calls += 1
        if self.tool_calls % self.size.heavy_every == self.size.heavy_every // 2:
            self.heavy_calls += 1
            return self._heavy()
        kind = self.rng.choices(
            ("read", "read_part", "grep", "ls", "find", "log_slice", "shell", "edit", "write"),
            (14, 22, 16, 4, 4, 12, 10, 10, 6 if position == count - 1 else 2),
        )[0]
        source = f"src/tollgate/{module}.py"
        if kind == "read":
            target = self.rng.choice([f"tests/test_{m}.py" for m in MODULES[:6]] + [source])
            if self.written and self.rng.random() < 0.25:
                target = self.rng.choice(self.written)
            return _tool("read", path=target)
        if kind == "read_part":
            lines = self.files[source].count("\n")
            offset = self.rng.randint(1, max(1, lines - 40))
            return _tool("read", path=source, offset=offset, limit=self.rng.randint(30, 120))
        if kind == "grep":
            pattern = self.rng.choice(
                (f"def \\w+_{self.rng.choice(_NOUNS)}", "LIMIT_\\d", "log\\.warning", "class ")
            )
            return _tool("grep", pattern=pattern, path=self.rng.choice(("src", source)))
        if kind == "ls":
            return _tool("ls", path=self.rng.choice((".", "src/tollgate", "tests", "dumps")))
        if kind == "find":
            return _tool("find", pattern=self.rng.choice(("**/*.py", "**/*.md", "**/test_*.py")))
        if kind == "log_slice":
            start = self.rng.randint(1, 7900)
            end = start + self.rng.randint(8, 40)
            return _tool("bash", command=f"sed -n '{start},{end}p' logs/gateway.log")
        if kind == "shell":
            return _tool(
                "bash",
                command=self.rng.choice(
                    (
                        "grep -c ' ERROR ' logs/gateway.log",
                        f"grep -n 'def ' {source} | head -n 25",
                        "wc -l src/tollgate/*.py tests/*.py",
                        "tail -n 12 logs/gateway.log",
                        "grep -o 'status=[0-9]*' logs/gateway.log | sort | uniq -c",
                        "head -c 1200 data/quotas.jsonl",
                    )
                ),
            )
        if kind == "edit":
            return self._edit(module)
        return self._write(module)

    def _edit(self, module: str) -> dict[str, Any]:
        source = f"src/tollgate/{module}.py"
        free = [i for i in range(8) if f"{module}:{i}" not in self.edited]
        if not free:
            return _tool("read", path=source, offset=1, limit=40)
        index = self.rng.choice(free)
        self.edited.add(f"{module}:{index}")
        text = self.files[source]
        name = _constant(module, index)
        line = next(line for line in text.splitlines() if line.startswith(f"{name} = "))
        new = f"{name} = {int(line.split('= ')[1]) + self.rng.randint(1, 50)}"
        self.files = {**self.files, source: text.replace(line, new, 1)}
        return _tool("edit", path=source, oldText=line, newText=new)

    def _write(self, module: str) -> dict[str, Any]:
        number = len(self.written)
        target = self.rng.choice(
            (f"notes/tg-{module}-{number}.md", f"tests/test_regress_{module}_{number}.py")
        )
        tokens = self.rng.randint(*self.size.write_tokens)
        if target.endswith(".py"):
            content = _test_module(self.rng, module, 2)
            while count_tokens(content) < tokens:
                content += _test_module(self.rng, module, 4).split("\n", 4)[-1]
        else:
            content = f"# TG notes on {module}\n\n"
            while count_tokens(content) < tokens:
                content += _prose(self.rng, 60) + "\n\n"
        self.written.append(target)
        self.files = {**self.files, target: content}
        return _tool("write", path=target, content=content)

    def _heavy(self) -> dict[str, Any]:
        """A read or command whose output is heavy_tokens tokens (within the tools' bounds)."""
        target = self.rng.randint(*self.size.heavy_tokens)
        kind = self.rng.choice(("log", "jsonl", "hex", "csv"))
        if kind == "csv":
            rows = self.files["metrics/latency.csv"].splitlines()
            start = self.rng.randint(2, len(rows) // 2)
            count = _lines_for(rows[start - 1 :], target, numbered=False)
            return _tool(
                "bash", command=f"sed -n '{start},{start + count - 1}p' metrics/latency.csv"
            )
        path = {
            "log": "logs/gateway.log",
            "jsonl": "data/quotas.jsonl",
            "hex": f"dumps/segment-{self.rng.randrange(4):02d}.hex",
        }[kind]
        rows = self.files[path].splitlines()
        offset = self.rng.randint(1, len(rows) // 2)
        limit = _lines_for(rows[offset - 1 :], target, numbered=True)
        return _tool("read", path=path, offset=offset, limit=limit)


def _lines_for(rows: list[str], tokens: int, *, numbered: bool) -> int:
    """How many of `rows` make an output of about `tokens` tokens, within the 50 KB bound."""
    total = size = 0
    for count, row in enumerate(rows, start=1):
        line = f"{count:>6}\t{row}" if numbered else row
        size += len(line.encode()) + 1
        total += count_tokens(line + "\n")
        if total >= tokens or size > MAX_BYTES - 1024:
            return count
    return len(rows)


def _tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}
