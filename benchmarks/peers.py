"""The peer benchmark: agent-server and three widely used coding agents on one scripted session.

`agent-server bench peers` (or `make bench-peers`) installs pi, Claude Code and Codex from npm
(pinned versions, into `~/.cache/agent-server/peers`, or `$AGENT_SERVER_PEERS_CACHE`), then
runs each client, and agent-server itself, against the built-in simulator on the default
scenario (18 turns about the sample workspace), once on `sim-large` (200k window) and once on
`sim-small` (32k window, so that every client has to compact). Each run gets a fresh copy of
the sample workspace, a fresh home directory, a fake key and a fresh simulator; the clients
talk to it directly over loopback (their documented base-URL settings, no proxy, no patch):

- pi: a provider in `$PI_CODING_AGENT_DIR/models.json` with `api: anthropic-messages`, one
  `pi --mode rpc` process for the session, a `prompt` command a turn (benchmarks/pi_rpc.py:
  `pi -p` runs an overflow's retry on a disposed session);
- Claude Code: `ANTHROPIC_BASE_URL`, `claude -p` then `claude -p --resume`, with
  `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` and the model's window and output limit
  (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_CODE_MAX_OUTPUT_TOKENS`), since it does not know
  `sim-*` models;
- Codex: a provider with `base_url` and `wire_api = "responses"` in `$CODEX_HOME/config.toml`,
  `codex exec` then `codex exec resume --last`;
- agent-server: the product's own session (`AgentSession`, real tools) through the
  `openai-responses` provider, as Codex uses that API, and (`agent-server-anthropic`) through
  the `anthropic` provider, as pi and Claude Code use that one.

Every request each run made is kept, as the simulator logged it, in
`.bench/peers/<run>/<client>-<model>.jsonl` (full bodies), with the distinct tool results in
`<client>-<model>.tool-results.jsonl` (one line each: id, tool, arguments, tokens, text), so
that later work can compare, line by line, what each client sends back to the model.

**Lines carried.** For each peer, the share of its tool-result lines that agent-server's tool
results carry too, over the whole run (`carried_lines`): every line of every distinct tool
result the peer sent, normalised the way each tool prints it (`line_key`), is looked for among
the normalised lines of agent-server's run on the same model and API (the Messages API run for
pi and Claude Code, the Responses run for Codex). Harness notes are not content and are left
out on both sides: "[Showing lines ...]", "[N more lines ...]", Codex's exec header (chunk id,
wall time, exit code, token count) and its truncation markers, blank lines. The lines a peer
gives that ours do not are written to `<client>-<model>.missing.txt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from agent_server.agent.settings import AgentSettings, settings_from_json
from agent_server.llm.cost import call_cost
from agent_server.llm.models import BUILTIN_MODELS, ModelInfo, ModelRegistry
from agent_server.sim import anthropic_api, openai_responses
from agent_server.sim.records import RequestRecord
from agent_server.sim.scenario import Scenario, default_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from agent_server.sim.summary import SummaryMode
from agent_server.sim.tokenizer import count_tokens
from agent_server.sim.transcript import Transcript
from agent_server.sim.workspace import write_sample_workspace
from benchmarks.cost_bench import Bill, bill, open_session
from benchmarks.pi_rpc import PiRpc
from benchmarks.strategies import Strategy

MODELS = ("sim-large", "sim-small")
FAKE_KEY = "sk-sim-not-a-real-key"
TURN_TIMEOUT = 600.0
_REGISTRY = ModelRegistry(BUILTIN_MODELS)


@dataclass(frozen=True, slots=True)
class Peer:
    name: str
    package: str
    version: str
    binary: str
    api: str  # "anthropic" or "openai-responses"


PEERS: tuple[Peer, ...] = (
    Peer("pi", "@mariozechner/pi-coding-agent", "0.73.1", "pi", "anthropic"),
    Peer("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude", "anthropic"),
    Peer("codex", "@openai/codex", "0.171.0", "codex", "openai-responses"),
)


@dataclass(frozen=True, slots=True)
class AgentServerClient:
    """agent-server as a client of the benchmarks: an API and the compaction settings
    (camelCase, as in settings.json) that differ from the defaults."""

    name: str
    api: str  # "anthropic" or "openai-responses"
    compaction: Mapping[str, Any]


# agent-server runs on the Responses API (as Codex does) and, for a like-for-like comparison
# with pi and Claude Code, on the Messages API too; then with the provider's own compaction
# (`compaction.engine: "provider"`: Anthropic's on-demand compaction, OpenAI's
# /responses/compact) and with Anthropic's clearing of old tool results, beside our own.
AGENT_SERVERS: tuple[AgentServerClient, ...] = (
    AgentServerClient("agent-server", "openai-responses", {}),
    AgentServerClient("agent-server-anthropic", "anthropic", {}),
    AgentServerClient("agent-server+provider", "openai-responses", {"engine": "provider"}),
    AgentServerClient("agent-server-anthropic+provider", "anthropic", {"engine": "provider"}),
    AgentServerClient("agent-server-anthropic+clear", "anthropic", {"clearToolResults": True}),
)
CLIENTS = (*(c.name for c in AGENT_SERVERS), *(peer.name for peer in PEERS))
# `bench peers` by default: our two APIs with the default settings, and the peers.
PEERS_CLIENTS = ("agent-server", "agent-server-anthropic", *(peer.name for peer in PEERS))


def agent_server_client(name: str) -> AgentServerClient | None:
    return next((c for c in AGENT_SERVERS if c.name == name), None)


def cache_dir() -> Path:
    configured = os.environ.get("AGENT_SERVER_PEERS_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "agent-server" / "peers"


def install(peer: Peer, cache: Path) -> Path:
    """The client's executable, installed from npm at its pinned version if not already."""
    prefix = cache / f"{peer.name}-{peer.version}"
    executable = prefix / "node_modules" / ".bin" / peer.binary
    if not executable.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
             f"{peer.package}@{peer.version}"],
            check=True, stdout=subprocess.DEVNULL,
        )
    return executable


@dataclass(frozen=True, slots=True)
class Session:
    """What every client runs: a scenario, the workspace it is written against, and the
    environment its commands need (the same for every client)."""

    name: str
    scenario: Scenario
    write: Callable[[Path], None]
    env: Mapping[str, str] = field(default_factory=dict)


def default_session() -> Session:
    """The simulator's default scenario on the sample workspace."""
    return Session("default", default_scenario(), write_sample_workspace)


# --- running a client -----------------------------------------------------------------------


@dataclass
class Run:
    """One client's session on one model."""

    client: str
    model: str
    version: str
    records: list[RequestRecord]
    turns: int
    failed_turns: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    session: str = "default"
    summariser: SummaryMode = "faithful"
    strategy: str = "default"  # agent-server's (benchmarks/strategies.py)
    exploring: frozenset[str] = frozenset()  # the scenario's exploring steps


# What every client's commands see of the terminal and the machine, the same for all: the
# peers run as processes with these (and nothing of the shell that started the benchmark);
# agent-server, which runs in the benchmark's process, gets them in it for the run
# (`_environment`), with the variables below that would make its outputs differ taken out.
# Under `CI` pytest prints each failed assertion whole: left to the shell, agent-server's test
# outputs were shorter than the peers' (525-653 tokens a failing run in pyflakes-report).
COMMAND_ENV = {"LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "CI": "1"}
NOT_IN_COMMAND_ENV = ("COLUMNS", "LINES", "FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE",
                      "PYTEST_ADDOPTS")


def _clean_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """A minimal environment: no proxy, no real key, the client's own home."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **COMMAND_ENV}
    env.update(extra)
    return env


def _pi_setup(home: Path, base_url: str, model: ModelInfo) -> tuple[dict[str, str], list[str]]:
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    # pi reserves 16,384 tokens below the window and asks for summaries of up to 80% of that:
    # more than sim-small's 4,096-token output limit, which the API refuses; and it keeps the
    # last 20,000 tokens verbatim, which on a 32k window leaves no room after a compaction. A
    # pi user with such a model lowers both (to the output limit, and to a quarter of the
    # window), as here; on sim-large these are pi's defaults.
    compaction = {"reserveTokens": min(16_384, model.max_output),
                  "keepRecentTokens": min(20_000, model.context_window // 4)}
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": compaction}),
                                             encoding="utf-8")
    pricing = model.pricing
    models = {"providers": {"sim": {
        "baseUrl": base_url, "api": "anthropic-messages", "apiKey": "SIM_API_KEY",
        "models": [{
            "id": model.id, "name": model.name, "contextWindow": model.context_window,
            "maxTokens": model.max_output,
            "cost": {"input": pricing.input, "output": pricing.output,
                     "cacheRead": pricing.cache_read, "cacheWrite": pricing.cache_write_5m},
        }],
    }}}
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
    env = {"PI_CODING_AGENT_DIR": str(agent_dir), "SIM_API_KEY": FAKE_KEY}
    return env, ["--provider", "sim", "--model", model.id]


def _claude_setup(home: Path, base_url: str, model: ModelInfo) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(model.max_output),
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(model.context_window),
    }


def _codex_setup(home: Path, base_url: str, model: ModelInfo) -> dict[str, str]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        f'model = "{model.id}"\n'
        'model_provider = "sim"\n'
        f"model_context_window = {model.context_window}\n"
        # Unsandboxed, as every other client runs its commands here: Codex's Linux sandbox
        # fails a Node child process it has already run (openai/codex#41175), so `node
        # --test` reports whole files, never a test, and it refuses sockets a test suite opens.
        'sandbox_mode = "danger-full-access"\n'
        "\n[model_providers.sim]\n"
        'name = "agent-server sim"\n'
        f'base_url = "{base_url}/v1"\n'
        'env_key = "SIM_API_KEY"\n'
        'wire_api = "responses"\n',
        encoding="utf-8",
    )
    return {"CODEX_HOME": str(codex_home), "SIM_API_KEY": FAKE_KEY}


def turn_command(peer: Peer, executable: Path, model: ModelInfo, prompt: str, first: bool,
                 session_id: str) -> list[str]:
    """The command line that sends `prompt` as the next turn of the client's session (Claude
    Code's, Codex's; pi's session is one process, `pi_command`)."""
    exe = str(executable)
    if peer.name == "claude-code":
        session = ["--session-id", session_id] if first else ["--resume", session_id]
        return [exe, "-p", prompt, "--model", model.id, *session,
                "--allowedTools", "Read,Glob,Grep,Bash,Edit,Write"]
    common = ["--skip-git-repo-check", "-m", model.id]
    if first:
        return [exe, "exec", *common, prompt]
    return [exe, "exec", "resume", "--last", *common, prompt]


def pi_command(executable: Path, pi_args: Sequence[str]) -> list[str]:
    """pi for a whole session, in its RPC mode (benchmarks/pi_rpc.py says why not `-p`)."""
    return [str(executable), *pi_args, "--mode", "rpc"]


def run_peer(peer: Peer, executable: Path, model_id: str, run_dir: Path, scratch: Path,
             progress: Callable[[str], None], session: Session | None = None,
             summariser: SummaryMode = "faithful") -> Run:
    session = session or default_session()
    model = _REGISTRY.require(model_id)
    name = f"{peer.name}-{model_id}"
    home = scratch / "homes" / name
    workspace = scratch / "workspaces" / name
    for path in (home, workspace):
        shutil.rmtree(path, ignore_errors=True)
    home.mkdir(parents=True)
    session.write(workspace)
    simulator = Simulator(scenario=session.scenario, summariser=summariser,
                          log_path=run_dir / f"{name}.jsonl")
    handle = SimServer(simulator).run_in_thread()
    notes: list[str] = []
    failed = 0
    started = time.perf_counter()
    prompts = session.scenario.prompts
    try:
        pi_args: list[str] = []
        if peer.name == "pi":
            extra, pi_args = _pi_setup(home, handle.base_url, model)
        elif peer.name == "claude-code":
            extra = _claude_setup(home, handle.base_url, model)
        else:
            extra = _codex_setup(home, handle.base_url, model)
        env = _clean_env(home, {**extra, **session.env})
        transcript = (run_dir / f"{name}.out").open("w", encoding="utf-8")
        with transcript:
            if peer.name == "pi":
                failed, notes = _run_pi(pi_command(executable, pi_args), prompts, workspace,
                                        env, transcript, progress, model_id)
            else:
                failed, notes = _run_turns(peer, executable, model, prompts, workspace, env,
                                           transcript, progress)
    finally:
        handle.stop()
        simulator.close()
    return Run(peer.name, model_id, peer.version, list(simulator.records), len(prompts), failed,
               time.perf_counter() - started, notes, session.name, summariser,
               exploring=exploring_steps(session.scenario))


def _run_turns(peer: Peer, executable: Path, model: ModelInfo, prompts: Sequence[str],
               workspace: Path, env: Mapping[str, str], transcript: IO[str],
               progress: Callable[[str], None]) -> tuple[int, list[str]]:
    """Claude Code's or Codex's session, one process a turn: (turns failed, notes)."""
    failed, notes = 0, []
    session_id = str(uuid.uuid4())
    for index, prompt in enumerate(prompts):
        progress(f"  {peer.name} on {model.id}: turn {index + 1}/{len(prompts)}")
        command = turn_command(peer, executable, model, prompt, index == 0, session_id)
        try:
            done = subprocess.run(command, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TURN_TIMEOUT)
        except subprocess.TimeoutExpired:
            failed += 1
            notes.append(f"turn {index + 1} timed out")
            continue
        transcript.write(f"### turn {index + 1} (exit {done.returncode})\n{done.stdout}\n"
                         f"--- stderr\n{done.stderr}\n")
        if done.returncode != 0:
            failed += 1
            notes.append(f"turn {index + 1} exited {done.returncode}")
    return failed, notes


def _run_pi(command: Sequence[str], prompts: Sequence[str], workspace: Path,
            env: Mapping[str, str], transcript: IO[str], progress: Callable[[str], None],
            model_id: str) -> tuple[int, list[str]]:
    """pi's session, one RPC process for all its turns: (turns failed, notes)."""
    failed, notes = 0, []
    rpc = PiRpc(command, workspace, env, transcript)
    try:
        for index, prompt in enumerate(prompts):
            progress(f"  pi on {model_id}: turn {index + 1}/{len(prompts)}")
            outcome = rpc.turn(prompt, TURN_TIMEOUT)
            transcript.write(f"### turn {index + 1} ({'ok' if outcome.ok else 'failed'})\n"
                             f"{outcome.text}\n{outcome.error}\n")
            transcript.flush()
            if not outcome.ok:
                failed += 1
                notes.append(f"turn {index + 1} failed: {outcome.error}")
    finally:
        rpc.close()
    return failed, notes


@contextlib.contextmanager
def _environment(extra: Mapping[str, str]) -> Iterator[None]:
    """`extra` in this process's environment for the while (agent-server's tools run in it),
    over COMMAND_ENV and without NOT_IN_COMMAND_ENV, as the peers' commands see it."""
    wanted = {**COMMAND_ENV, **extra}
    saved = {key: os.environ.get(key) for key in (*wanted, *NOT_IN_COMMAND_ENV)}
    for key in NOT_IN_COMMAND_ENV:
        os.environ.pop(key, None)
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


async def _run_agent_server(client: str, model_id: str, run_dir: Path, scratch: Path,
                            session: Session | None = None,
                            summariser: SummaryMode = "faithful",
                            strategy: Strategy | None = None) -> Run:
    session = session or default_session()
    strategy = strategy or Strategy("default", "default")
    name = f"{client}-{model_id}" if strategy.name == "default" else \
        f"{client}-{strategy.name}-{model_id}"
    workspace = scratch / "workspaces" / name
    shutil.rmtree(workspace, ignore_errors=True)
    session.write(workspace)
    simulator = Simulator(scenario=session.scenario, summariser=summariser,
                          log_path=run_dir / f"{name}.jsonl")
    failed = 0
    notes: list[str] = []
    started = time.perf_counter()
    prompts = session.scenario.prompts
    async with SimServer(simulator) as server:
        variant = agent_server_client(client)
        assert variant is not None, client
        anthropic = variant.api == "anthropic"
        settings = settings_from_json({"compaction": variant.compaction}, AgentSettings(
            provider=variant.api, model=model_id,
            base_url=server.base_url if anthropic else server.base_url + "/v1",
            permissions_mode="allowAll", sessions_dir=str(scratch / "homes" / name),
            cache_retention=strategy.cache_retention, compaction=strategy.compaction,
            # Unsandboxed, as pi and Claude Code run here (Codex's sandbox lets a command read
            # the whole disk): agent-server's allow-list would hide what the workspace links
            # to outside it (the real-code suite's .venv), and the commands would fail.
            tools=dataclasses.replace(strategy.tools, sandbox="off"),
        ))
        with _environment(session.env):
            session_ = open_session(workspace, settings,
                                    strategy.policy() if strategy.policy else None)
            try:
                for index, prompt in enumerate(prompts):
                    result = await session_.run_turn(prompt)
                    if result.stop_reason != "end_turn":
                        failed += 1
                        notes.append(f"turn {index + 1} stopped: {result.stop_reason}")
            finally:
                await session_.close()
    simulator.close()
    from agent_server import __version__

    return Run(client, model_id, __version__, list(simulator.records), len(prompts),
               failed, time.perf_counter() - started, notes, session.name, summariser,
               strategy.name, exploring_steps(session.scenario))


# --- figures --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolResultLine:
    id: str
    tool: str
    arguments: dict[str, Any]
    tokens: int
    is_error: bool
    text: str


def transcript_of(record: RequestRecord) -> Transcript | None:
    body = record.request
    try:
        if record.api == "anthropic-messages":
            return anthropic_api.parse_request(body, _REGISTRY).transcript
        if record.api == "openai-responses":
            return openai_responses.parse_request(body, _REGISTRY, lambda _: None).transcript
    except Exception:  # a refused request has no transcript to read
        return None
    return None


def tool_results(records: Iterable[RequestRecord]) -> list[ToolResultLine]:
    """Every distinct tool result the client sent, in order of first appearance."""
    seen: set[str] = set()
    out: list[ToolResultLine] = []
    for record in records:
        transcript = transcript_of(record)
        if transcript is None:
            continue
        for message in transcript.messages:
            for result in message.tool_results:
                if result.tool_call_id in seen:
                    continue
                seen.add(result.tool_call_id)
                call = transcript.tool_call(result.tool_call_id)
                out.append(ToolResultLine(
                    result.tool_call_id, call.name if call else "?",
                    dict(call.arguments) if call else {}, count_tokens(result.text),
                    result.is_error, result.text,
                ))
    return out


def fixed_prefix_tokens(records: Iterable[RequestRecord]) -> int:
    """System prompt and tools (and Codex's leading developer messages) of the first answered
    request of the session, in the simulator's tokens."""
    for record in records:
        if record.status != 200 or record.source == "summary":
            continue
        body = record.request
        if record.api == "anthropic-messages":
            blocks = anthropic_api.parse_request(body, _REGISTRY).blocks
            return sum(b.tokens for b in blocks if b.canonical.startswith(("tool|", "system|")))
        if record.api == "openai-responses":
            blocks = openai_responses.parse_request(body, _REGISTRY, lambda _: None).blocks
            total = 0
            for block in blocks:
                kind, _, rest = block.canonical.partition("|")
                leading = kind == "message" and json.loads(rest).get("role") in (
                    "developer", "system")
                if kind in ("instructions", "tool") or leading:
                    total += block.tokens
                else:
                    break
            return total
    return 0


# --- lines carried ---------------------------------------------------------------------------

# A scratch workspace path as the clients print it (absolute): the part up to the workspace.
_WORKSPACE_PATH = re.compile(r"/\S*?/workspaces/[^/\s]+/?")
_CAT_N = re.compile(r"^\s*\d+(?:\t|\u2192)")  # cat -n, Claude Code's N<tab> and N→
# grep -rn: path:line:text (a path has a letter, a dot or a slash: "4:2024-05-06" is no path)
_GREP_WITH_PATH = re.compile(r"^(?=[^\s:]*[A-Za-z_./])[^\s:]+:\d+[:-]")
# one file's grep -n: line:text, line-context; our grep's line,line,...:text for a repeated text
_GREP_LINE = re.compile(r"^\d+(?:,\d+)*:|^\d+-(?=\D)")
_LS_LONG = re.compile(
    r"^[-dlcbps][-rwxsStT]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+\d+\s+\w{3}\s+\d+\s+[\d:]+\s+(.+)$"
)
# A duration in a command's output ("21 passed in 0.62s") differs from run to run.
_TIMING = re.compile(r"(\bin )\d+(?:\.\d+)?s\b")
# Tools whose results are a status message, not file content, matches or a listing.
_STATUS_TOOLS = frozenset(("write", "edit", "multiedit", "apply_patch", "notebookedit"))
# Whole lines that are a harness's notes about a result, not its content.
_NOTE_LINE = re.compile(
    r"^\[.*(?:Showing lines|more lines|offset=|unchanged since|Stopped after|truncated|"
    r"repeat lines|"
    r"full output).*\]$"
    r"|^(?:Chunk ID|Wall time|Process exited with code|Original token count|Total output lines"
    r"|Warning: truncated output)\b.*|^Output:$|.*\b(?:tokens|chars) truncated\b.*|^total \d+$"
    r"|^\(Bash completed with no output\)$",
)


def line_key(line: str) -> str | None:
    """A tool-result line as content, without how a tool printed it: no workspace path, no
    line-number or path prefix, no whitespace at either end, a long listing's entry by its
    name; None for a note or a blank line."""
    line = _WORKSPACE_PATH.sub("", line)
    if not line.strip() or _NOTE_LINE.match(line.strip()):
        return None
    listed = _LS_LONG.match(line.rstrip())
    if listed is not None:
        name = listed.group(1).split(" -> ")[0]
        return None if name in (".", "..") else name
    line = _CAT_N.sub("", line, count=1)
    line = line.removeprefix("./")
    line = _GREP_WITH_PATH.sub("", line, count=1)
    line = _GREP_LINE.sub("", line, count=1)
    # Whitespace at either end is layout (grep's "path:line: text" puts a space there).
    line = line.strip().removeprefix("./").rstrip("/")
    return _TIMING.sub(r"\1Ns", line) or None


def result_keys(results: Iterable[ToolResultLine]) -> list[str]:
    """The content lines of `results`, normalised (line_key), in order; the status messages
    of writes and edits are not content."""
    keys: list[str] = []
    for result in results:
        if result.tool.lower() in _STATUS_TOOLS:
            continue
        for line in result.text.split("\n"):
            key = line_key(line)
            if key is not None:
                keys.append(key)
    return keys


@dataclass(frozen=True, slots=True)
class CarriedLines:
    carried: int
    total: int
    missing: list[str]

    @property
    def share(self) -> float:
        return self.carried / self.total if self.total else 1.0


def carried_lines(peer: Iterable[ToolResultLine], ours: Iterable[ToolResultLine]) -> CarriedLines:
    """How many of the peer's content lines ours carry too, over the run."""
    have = set(result_keys(ours))
    keys = result_keys(peer)
    missing = [key for key in keys if key not in have]
    return CarriedLines(len(keys) - len(missing), len(keys), missing)


def api_of(client: str) -> str:
    """The API a client of the benchmarks talks: "anthropic" or "openai-responses"."""
    ours = agent_server_client(client) or agent_server_client(client.split("+")[0])
    if ours is not None:
        return ours.api
    return next((p.api for p in PEERS if p.name == client), "anthropic")


def reference_client(peer: str) -> str:
    """The agent-server run a peer's lines are compared with: the one on the peer's API."""
    return "agent-server-anthropic" if api_of(peer) == "anthropic" else "agent-server"


VIOLATION_KINDS = ("rule", "request", "decision", "failed", "lost")


@dataclass
class Recall:
    """What a run's model needed to know, and what it cost when it did not (from the
    knowledge checks the simulator recorded on each request, `agent_server.sim.knowledge`).

    `needed`: the distinct (step, fact) pairs the run's steps relied on; `found`: those found
    in the request the first time they were looked for; `recoveries`: the model calls that
    fetched a missing fact again, with their prompt and output tokens and their bill;
    `violations`: by kind, each time the model acted without an unfetchable fact (broke a
    rule, answered an older request, went against a decision, retried what failed), and
    `lost`, the (step, fact) pairs still missing after their fetch; `completed`: the
    distinct scenario steps answered; `reads_on`: the model calls that read on where a
    result was cut before the lines its step reads to see (`agent_server.sim.reading`), billed
    as the session's work, not counted as recoveries."""

    needed: int = 0
    found: int = 0
    recoveries: int = 0
    recovery_tokens: int = 0
    recovery_cost: float = 0.0
    violations: dict[str, int] = field(default_factory=dict)
    completed: int = 0
    reads_on: int = 0

    @property
    def violation_count(self) -> int:
        return sum(self.violations.values())


@dataclass
class Exploration:
    """The calls a run spent exploring, before and after its first compaction (each a pair):
    `calls`, the requests that answered an exploring step (one that lists, finds or searches
    for what it names: `Step.finds`) or asked for the repository map; `maps`, the map calls
    among them; `skipped`, the exploring steps the model did not take because its request
    already showed what they look for."""

    calls: tuple[int, int] = (0, 0)
    maps: tuple[int, int] = (0, 0)
    skipped: tuple[int, int] = (0, 0)


def exploring_steps(scenario: Scenario) -> frozenset[str]:
    """"<turn>:<step>" of the scenario's exploring steps."""
    return frozenset(f"{t}:{i}" for t, turn in enumerate(scenario.turns)
                     for i, step in enumerate(turn.steps) if step.finds)


def exploration_of(records: Iterable[RequestRecord], exploring: frozenset[str]) -> Exploration:
    calls, maps, skipped = [0, 0], [0, 0], [0, 0]
    after = 0
    for record in records:
        if record.status != 200:
            continue
        if record.source == "summary":
            after = 1
            continue
        source = record.source or ""
        if source.startswith("explore:"):
            maps[after] += 1
            calls[after] += 1
        elif record.completed_step in exploring:
            calls[after] += 1
        skipped[after] += len(record.skipped)
    return Exploration((calls[0], calls[1]), (maps[0], maps[1]), (skipped[0], skipped[1]))


@dataclass
class HeadChurn:
    """How the head of the prompt (its first message) changed from one request to the next,
    and what the requests read from the cache either way: the seed's claim that a head that
    changes every turn makes the cache hit rate 0% (a map at the head, Aider's way). Only the
    session's own requests count (summaries aside), each against the one before it."""

    requests: int = 0
    changed: int = 0
    read_changed: int = 0  # cache-read tokens of the requests whose head changed
    prompt_changed: int = 0  # their prompt tokens
    read_kept: int = 0
    prompt_kept: int = 0

    @property
    def read_share_changed(self) -> float:
        return self.read_changed / self.prompt_changed if self.prompt_changed else 0.0

    @property
    def read_share_kept(self) -> float:
        return self.read_kept / self.prompt_kept if self.prompt_kept else 0.0


def head_churn(records: Iterable[RequestRecord]) -> HeadChurn:
    out = HeadChurn()
    previous: str | None = None
    for record in records:
        if record.status != 200 or record.source == "summary" or record.tokens is None:
            continue
        transcript = transcript_of(record)
        if transcript is None or not transcript.messages:
            continue
        head = repr(transcript.messages[0])
        tokens = record.tokens
        out.requests += 1
        if previous is not None and head != previous:
            out.changed += 1
            out.read_changed += tokens.cache_read
            out.prompt_changed += tokens.prompt
        elif previous is not None:
            out.read_kept += tokens.cache_read
            out.prompt_kept += tokens.prompt
        previous = head
    return out


def recall_of(records: Iterable[RequestRecord], model: ModelInfo) -> Recall:
    first: dict[tuple[str, str], str] = {}
    lost: set[tuple[str, str]] = set()
    violations: Counter[str] = Counter()
    completed: set[str] = set()
    out = Recall()
    for record in records:
        if record.status != 200:
            continue
        for check in record.knowledge:
            first.setdefault((check.step, check.fact), check.outcome)
            if check.outcome == "violated":
                violations[check.kind] += 1
            elif check.outcome == "lost":
                lost.add((check.step, check.fact))
        if record.completed_step is not None:
            completed.add(record.completed_step)
        completed.update(record.skipped)  # done with what the request already showed
        out.reads_on += (record.source or "").startswith("read-on:")
        if (record.source or "").startswith("recovery:") and record.tokens is not None:
            tokens = record.tokens
            out.recoveries += 1
            out.recovery_tokens += tokens.prompt + tokens.output
            out.recovery_cost += call_cost(
                model.pricing, input=tokens.input, output=tokens.output,
                cache_read=tokens.cache_read, cache_write_short=tokens.cache_write_5m,
                cache_write_long=tokens.cache_write_1h).total
    out.needed = len(first)
    out.found = sum(outcome == "found" for outcome in first.values())
    violations["lost"] = len(lost)
    out.violations = {kind: violations[kind] for kind in VIOLATION_KINDS}
    out.completed = len(completed)
    return out


@dataclass
class Figures:
    client: str
    model: str
    version: str
    requests: int
    cost: float
    cache_read_share: float
    cache_write: int
    fixed_prefix: int
    tool_results: int
    tool_result_tokens: int
    summaries: int
    failed_requests: int
    failed_turns: int
    turns: int
    off_script: int
    seconds: float
    notes: list[str]
    lines_carried: CarriedLines | None = None  # a peer's lines that agent-server carries too
    recall: Recall = field(default_factory=Recall)
    session: str = "default"
    summariser: str = "faithful"
    strategy: str = "default"
    exploration: Exploration = field(default_factory=Exploration)
    head: HeadChurn = field(default_factory=HeadChurn)

    @property
    def cost_per_step(self) -> float:
        """The bill per scenario step the run completed."""
        return self.cost / self.recall.completed if self.recall.completed else 0.0


def figures(run: Run) -> Figures:
    model = _REGISTRY.require(run.model)
    billed: Bill = bill(run.records, model)
    results = tool_results(run.records)
    return Figures(
        client=run.client, model=run.model, version=run.version, requests=billed.requests,
        cost=billed.cost, cache_read_share=billed.cache_read_share,
        cache_write=billed.cache_write, fixed_prefix=fixed_prefix_tokens(run.records),
        tool_results=len(results), tool_result_tokens=sum(r.tokens for r in results),
        summaries=billed.summaries, failed_requests=billed.failed,
        failed_turns=run.failed_turns, turns=run.turns, off_script=billed.off_script,
        seconds=run.seconds, notes=run.notes, recall=recall_of(run.records, model),
        session=run.session, summariser=run.summariser, strategy=run.strategy,
        exploration=exploration_of(run.records, run.exploring), head=head_churn(run.records),
    )


def compare_lines(results: Sequence[Figures], run_dir: Path) -> None:
    """Each peer's `lines_carried`, against the agent-server run on its model and API (from
    the tool results written in `run_dir`); its missing lines in `<client>-<model>.missing.txt`."""

    def load(client: str, model: str) -> list[ToolResultLine] | None:
        path = run_dir / f"{client}-{model}.tool-results.jsonl"
        if not path.exists():
            return None
        with path.open(encoding="utf-8") as lines:
            return [ToolResultLine(**json.loads(line)) for line in lines]

    for row in results:
        if row.client.startswith("agent-server"):
            continue
        ours = load(reference_client(row.client), row.model)
        theirs = load(row.client, row.model)
        if ours is None or theirs is None:
            continue
        row.lines_carried = carried_lines(theirs, ours)
        missing = run_dir / f"{row.client}-{row.model}.missing.txt"
        missing.write_text("".join(f"{key}\n" for key in row.lines_carried.missing),
                           encoding="utf-8")


def write_tool_results(run: Run, run_dir: Path) -> None:
    path = run_dir / f"{run.client}-{run.model}.tool-results.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for line in tool_results(run.records):
            out.write(json.dumps(asdict(line), ensure_ascii=False) + "\n")


# --- the command ----------------------------------------------------------------------------


def has_npm(command: str, clients: Sequence[str]) -> bool:
    """Whether the peers among `clients` can be installed; says what is missing if not."""
    if shutil.which("npm") is None and any(not c.startswith("agent-server") for c in clients):
        print(f"agent-server bench {command} needs npm (Node 20 or later) to install the "
              "clients.", file=sys.stderr)
        return False
    return True


def main(clients: Sequence[str] = PEERS_CLIENTS, models: Sequence[str] = MODELS,
         out_dir: Path | None = None) -> int:
    from benchmarks.report import print_peers

    unknown = [c for c in clients if c not in CLIENTS] + [m for m in models
                                                           if _REGISTRY.get(m) is None]
    if unknown:
        print(f"agent-server bench peers: unknown {', '.join(unknown)}; clients are "
              f"{', '.join(CLIENTS)}, models {', '.join(MODELS)}", file=sys.stderr)
        return 2
    if not has_npm("peers", clients):
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = (out_dir or Path(".bench") / "peers" / stamp).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    cache = cache_dir()
    executables: dict[str, Path] = {}
    for peer in PEERS:
        if peer.name in clients:
            progress(f"installing {peer.package}@{peer.version} into {cache}")
            executables[peer.name] = install(peer, cache)
    results: list[Figures] = []
    # Workspaces and homes live outside any checkout (a client reads the git status of the
    # repository it runs in) and outside /tmp (Codex will not set up its sandbox helper under
    # a temporary directory), and are removed afterwards; the logs stay in run_dir.
    runs = cache.parent / "peer-runs"
    runs.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{stamp}-", dir=runs))
    try:
        for model_id in models:
            for client in clients:
                progress(f"{client} on {model_id}")
                if client.startswith("agent-server"):
                    run = asyncio.run(_run_agent_server(client, model_id, run_dir, scratch))
                else:
                    peer = next(p for p in PEERS if p.name == client)
                    run = run_peer(peer, executables[client], model_id, run_dir, scratch,
                                   progress)
                write_tool_results(run, run_dir)
                results.append(figures(run))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    compare_lines(results, run_dir)
    (run_dir / "summary.json").write_text(
        json.dumps([asdict(f) for f in results], indent=2), encoding="utf-8"
    )
    print_peers(results, run_dir)
    return 0
