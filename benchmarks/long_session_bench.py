"""Long sessions: opening, loading and streaming a session whatever its length.

One ledger of N entries (100k by default, about 105 MB) is built with `ledger_bench`'s
realistic turns: compactions where the agent would make them near a 128k window, each keeping
its recent turns, and a tail of ordinary turns after the last one (not a compaction that keeps
nothing). Then, each figure beside a baseline measured in the same run:

- open: `WorkspaceAgent.open` in a fresh interpreter: wall time, and peak RSS above the
  interpreter with the agent imported and idle (VmHWM, reset just before the open, against
  /proc/self/statm). Twice: the first open of the ledger (it builds the index, if the code
  has one) and the next. Baseline: `json.loads` of every line in a fresh interpreter, the
  least any reader of the whole file does; and pi's `SessionManager.open` when pi is installed
  (skipped otherwise);
- LSP load: `agent-server serve` on stdio, driven by a raw JSON-RPC client: `agent/session/load`
  of the long session (answer time, answer size, the server's peak RSS from /proc's VmHWM
  above its RSS before the load), the same load again, and then every page of
  `agent/session/history` back to the start (when the server has it). Baseline: the load of a
  10-entry session in the same server;
- notifications: the server's own notification path (`AgentLanguageServer.relay` of text
  chunks, as a streamed answer makes them) writing to a real pipe that another process drains,
  timed in the server from the first relay to the last byte handed to the pipe. Baseline: the
  same updates through pygls's `protocol.notify` and its stdout writer (a write and a flush per
  message), in the same process;
- cold start: `agent-server serve` spawned, `initialize` written, until its answer is read
  (median of 7). Baseline: `python -c pass` spawned and reaped the same way.

    .venv/bin/python -m benchmarks.long_session_bench [--entries 100000] [--ledger-dir DIR]
        [--json FILE]

`--ledger-dir` keeps the built ledger to reuse across runs (and across revisions: the format
is the same).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_server.session.entries import CompactionEntry, ModelChangeEntry

ROOT = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")
MODEL = "sim-large"
NOTIFICATIONS = 20_000
BURST = 8  # text deltas handled between two yields of the event loop
PI_DIR = Path.home() / ".cache" / "agent-server" / "peers" / "pi"


# --- the ledger -------------------------------------------------------------------------------


def build(directory: Path, entries: int) -> dict[str, Any]:
    """A long session and a short one in `directory` (reused when already there)."""
    from agent_server.session.store import SessionStore
    from benchmarks.ledger_bench import build_session

    workspace = directory / "workspace"
    sessions = directory / "sessions"
    marker = directory / "built.json"
    if marker.exists():
        built: dict[str, Any] = json.loads(marker.read_text("utf-8"))
        if built["entries"] == entries:
            return built
        shutil.rmtree(directory)
    workspace.mkdir(parents=True)
    store = SessionStore(sessions, workspace, fsync="never")
    started = time.perf_counter()
    ids = {}
    for name, size in (("long", entries), ("short", 10)):
        ledger = store.create(workspace, title=f"{name} session", model=MODEL)
        ledger.add(ModelChangeEntry, "anthropic-messages", MODEL)
        build_session(ledger, size, seed=7)
        ledger.sync()
        ids[name] = ledger.session_id
        ledger.close()
    path = store.ledger_path(ids["long"])
    built = {
        "entries": entries,
        "workspace": str(workspace),
        "sessions": str(sessions),
        "long": ids["long"],
        "short": ids["short"],
        "file_mb": path.stat().st_size / 1e6,
        "build_s": time.perf_counter() - started,
    }
    marker.write_text(json.dumps(built), "utf-8")
    return built


def real_session_lines(directory: Path) -> list[dict[str, Any]]:
    """The entries (as JSON) of a real session: the simulator's default scenario (18 turns
    about the sample workspace, real tools) run by the product's own session on sim-large.
    Kept in `directory` once made."""
    cached = directory / "real-session.jsonl"
    if not cached.exists():
        from agent_server.agent.model_call import RetryPolicy
        from agent_server.agent.model_setup import connect
        from agent_server.agent.settings import AgentSettings
        from agent_server.agent.workspace import WorkspaceAgent
        from agent_server.sim.scenario import default_scenario
        from agent_server.sim.server import SimServer, Simulator
        from agent_server.sim.workspace import write_sample_workspace

        async def run() -> Path:
            workspace = directory / "real-workspace"
            write_sample_workspace(workspace)
            async with SimServer(Simulator()) as server:
                settings = AgentSettings(
                    provider="sim",
                    base_url=server.base_url,
                    model=MODEL,
                    permissions_mode="allowAll",
                    sessions_dir=str(directory / "real-sessions"),
                )
                agent = WorkspaceAgent(
                    workspace,
                    settings,
                    connect_to=lambda s: connect(s, env={}),
                    retry=RetryPolicy(max_retries=0),
                    env={},
                    watch_files=False,
                )
                session = agent.create(title="real session")
                for prompt in default_scenario().prompts:
                    await session.run_turn(prompt)
                path = session.ledger.path
                await agent.close()
            return Path(path)

        path = asyncio.run(run())
        shutil.copyfile(path, cached)
    with cached.open("rb") as lines:
        return [json.loads(line) for line in lines][1:]


def build_independent(directory: Path, entries: int) -> dict[str, Any]:
    """A ledger of `entries` entries made differently from `build`'s: a real session's
    entries (`real_session_lines`) repeated with fresh ids, and a compaction after the first
    turn that ends past every ~200 entries, keeping that last turn (its summary is the real
    session's own wording repeated to about 3 kB). Reused when already there."""
    marker = directory / "built.json"
    if marker.exists():
        built: dict[str, Any] = json.loads(marker.read_text("utf-8"))
        if built["entries"] == entries:
            return built
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    from agent_server.session.store import SessionStore

    started = time.perf_counter()
    body = [
        line
        for line in real_session_lines(directory)
        if line["type"] in ("message", "title", "toolList", "modelChange", "systemPrompt")
    ]
    workspace = directory / "workspace"
    workspace.mkdir(exist_ok=True)
    store = SessionStore(directory / "sessions", workspace, fsync="never")
    ids = {}
    for name in ("long", "short"):
        ledger = store.create(workspace, title=f"independent {name} session", model=MODEL)
        ids[name] = ledger.session_id
        path = ledger.path
        ledger.close()
        with path.open("ab") as out:
            out.write(_repeated(body, entries if name == "long" else 10))
    built = {
        "entries": entries,
        "workspace": str(workspace),
        "sessions": str(directory / "sessions"),
        "long": ids["long"],
        "short": ids["short"],
        "file_mb": store.ledger_path(ids["long"]).stat().st_size / 1e6,
        "build_s": time.perf_counter() - started,
    }
    marker.write_text(json.dumps(built), "utf-8")
    return built


def _repeated(body: list[dict[str, Any]], entries: int) -> bytes:
    """`body` over and over as `entries` ledger lines, chained (each entry's parent the one
    before), tool call ids made unique per copy, with the compactions of `build_independent`."""
    out: list[bytes] = []
    previous: str | None = None
    turn_start: str | None = None
    since = 0
    copy = 0
    summary = " ".join(
        block["text"]
        for line in body
        if line["type"] == "message" and line["message"]["role"] == "assistant"
        for block in line["message"]["content"]
        if block.get("type") == "text"
    )[:3000]

    def write(line: dict[str, Any]) -> None:
        nonlocal previous
        line["id"] = f"{len(out):08x}"
        line["parentId"] = previous
        previous = line["id"]
        out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    while len(out) < entries:
        for original in body:
            if len(out) >= entries:
                break
            line = json.loads(json.dumps(original))
            message = line.get("message")
            if isinstance(message, dict):
                if message["role"] == "user" and not message.get("note"):
                    if since >= 200 and turn_start is not None:
                        write(
                            {
                                "type": "compaction",
                                "timestamp": line["timestamp"],
                                "summary": "## Goal\n" + summary,
                                "firstKeptEntryId": turn_start,
                                "tokensBefore": 150_000,
                                "tokensAfter": None,
                                "reason": "threshold",
                                "details": {"readFiles": [], "modifiedFiles": []},
                            }
                        )
                        since = 0
                    turn_start = f"{len(out):08x}"
                for block in message["content"]:
                    if block.get("type") == "toolCall":
                        block["id"] = f"{block['id']}_{copy}"
                if message["role"] == "toolResult":
                    message["toolCallId"] = f"{message['toolCallId']}_{copy}"
            write(line)
            since += 1
        copy += 1
    return b"".join(out[:entries])


def forget_index(built: dict[str, Any]) -> None:
    """Remove every sidecar but the session list's, so the next open starts from the JSONL."""
    for path in Path(built["sessions"]).rglob("*"):
        if path.is_file() and path.name.endswith((".index.json", ".index")):
            path.unlink()


# --- open in a fresh interpreter ----------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * PAGE / 1e6


def _reset_peak() -> None:
    """Start the peak (VmHWM) over from the current resident set (Linux 4.0+), so that an
    earlier peak (importing an SDK) is not counted as the open's."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def _open_here(built: dict[str, Any]) -> dict[str, Any]:
    from agent_server.agent.model_call import RetryPolicy
    from agent_server.agent.model_setup import connect
    from agent_server.agent.settings import AgentSettings
    from agent_server.agent.workspace import WorkspaceAgent

    settings = AgentSettings(
        provider="sim",
        base_url="http://127.0.0.1:9",
        model=MODEL,
        sessions_dir=built["sessions"],
        permissions_mode="allowAll",
    )
    agent = WorkspaceAgent(
        Path(built["workspace"]),
        settings,
        connect_to=lambda s: connect(s, env={}),
        retry=RetryPolicy(max_retries=0),
        env={},
        watch_files=False,
    )
    agent.list()
    # An idle server has loaded its provider SDKs (in the background, after `initialized`):
    # what is measured is the session's open, not the SDK's import.
    connect(settings, env={})
    _reset_peak()
    idle = _rss_mb()
    started = time.perf_counter()
    cpu_started = time.process_time()
    session = agent.open(built["long"])
    snapshot = session.usage.snapshot()
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    held = _rss_mb()
    peak = _peak_mb()
    # The turns append to the ledger: only ever on a copy (see `turns_on_a_copy`).
    per_turn = _turns(session) if built.get("copy") else None
    asyncio.run(agent.close())
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "idle_mb": idle,
        "peak_above_idle_mb": peak - idle,
        "held_above_idle_mb": held - idle,
        "context_tokens": snapshot.used,
        "mb_per_turn": per_turn,
    }


def turns_on_a_copy(built: dict[str, Any]) -> float:
    """MB per turn (see `_turns`), on a copy of the sessions: the ledger measured stays as
    it was built."""
    with tempfile.TemporaryDirectory(prefix="long-session-turns-") as scratch:
        sessions = Path(scratch) / "sessions"
        shutil.copytree(built["sessions"], sessions)
        copy = {**built, "sessions": str(sessions), "copy": True}
        result: float = in_fresh_process("open", copy)["mb_per_turn"]
        return result


def _turns(session: Any, turns: int = 300, every: int = 25) -> float:
    """Memory per turn once the session is open: turns of four entries (a prompt, a tool
    call, its 2 KB result, an answer) with the usage snapshot the server sends after each,
    and a compaction every `every` turns, as a long session has. MB of resident memory per
    turn between turn 50 and the last (after a full collection at each end)."""
    import gc

    from agent_server.llm.messages import (
        AssistantMessage,
        TextContent,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )

    ledger = session.ledger
    start = 0.0
    for number in range(turns):
        if number == 50:
            gc.collect()
            start = _rss_mb()
        prompt = ledger.append_message(UserMessage.of_text(f"Turn {number}: " + "ask " * 50))
        call = ToolCall(f"mem_{number}", "read", {"path": f"src/m{number}.py"})
        ledger.append_message(
            AssistantMessage((TextContent("Reading."), call), "toolUse", usage=Usage(10, 10))
        )
        ledger.append_message(ToolResultMessage(call.id, "read", (TextContent("x = 1\n" * 350),)))
        ledger.append_message(
            AssistantMessage((TextContent("Done " * 100),), "stop", usage=Usage(10, 10))
        )
        if number % every == every - 1:
            ledger.add(
                CompactionEntry,
                summary="## Goal\n" + "summary " * 250,
                first_kept_entry_id=prompt.id,
                tokens_before=50_000,
                reason="threshold", tokens_after=None,
            )
        session.usage.snapshot()
    gc.collect()
    return (_rss_mb() - start) / (turns - 50)


def _read_all_here(built: dict[str, Any]) -> dict[str, Any]:
    from agent_server.session.store import SessionStore

    path = SessionStore(Path(built["sessions"]), Path(built["workspace"])).ledger_path(
        built["long"]
    )
    _reset_peak()
    idle = _rss_mb()
    started = time.perf_counter()
    with path.open("rb") as handle:
        lines = [json.loads(line) for line in handle]
    seconds = time.perf_counter() - started
    peak = _peak_mb()
    return {"seconds": seconds, "peak_above_idle_mb": peak - idle, "lines": len(lines)}


def in_fresh_process(what: str, built: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.long_session_bench", "--child", what, json.dumps(built)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


PI_OPEN = r"""
const started = performance.now();
const { SessionManager } = await import(process.argv[2]);
const imported = performance.now();
const manager = SessionManager.open(process.argv[3]);
const context = manager.buildSessionContext();
const opened = performance.now();
console.log(JSON.stringify({ seconds: (opened - imported) / 1000,
  messages: context.messages.length, peak_mb: process.resourceUsage().maxRSS / 1e3 }));
"""


def pi_open(built: dict[str, Any]) -> dict[str, Any] | None:
    """pi's own open of the same session (converted to its format), when pi is installed."""
    entry = PI_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "index.js"
    if not entry.exists() or shutil.which("node") is None:
        return None
    from agent_server.session.store import SessionStore

    source = SessionStore(Path(built["sessions"]), Path(built["workspace"])).ledger_path(
        built["long"]
    )
    with tempfile.TemporaryDirectory(prefix="pi-open-") as scratch:
        target = Path(scratch) / "session.jsonl"
        with source.open("rb") as lines, target.open("wb") as out:
            for number, raw in enumerate(lines):
                data = json.loads(raw)
                if number == 0:
                    data = {
                        "type": "session",
                        "version": 3,
                        "id": data["id"],
                        "timestamp": data["createdAt"],
                        "cwd": data["workspace"],
                    }
                out.write(json.dumps(data, separators=(",", ":")).encode() + b"\n")
        script = Path(scratch) / "open.mjs"
        script.write_text(PI_OPEN, "utf-8")
        done = subprocess.run(
            ["node", str(script), entry.as_uri(), str(target)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- the editor path: a raw JSON-RPC client over stdio ---------------------------------------


# The server as the extension starts it: it takes every setting the client sends.
SERVE = [sys.executable, "-m", "agent_server", "serve", "--trust-editor-settings"]


class RawClient:
    """JSON-RPC over a subprocess's pipes, with nothing between the bytes and the figures."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._buffer = bytearray()
        self._pos = 0
        self._next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def read(self) -> tuple[dict[str, Any], int]:
        """The next message, and its size in bytes. The buffer grows in place and is read
        from a position (no copying of what is left per message: a 100 MB answer or a write
        of many small messages costs the reader its size, not its square)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        buffer = self._buffer
        while True:
            end = buffer.find(b"\r\n\r\n", self._pos)
            if end >= 0:
                length = 0
                for line in bytes(buffer[self._pos : end]).split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                start = end + 4
                if len(buffer) >= start + length:
                    body = bytes(buffer[start : start + length])
                    self._pos = start + length
                    if self._pos > 1 << 20:
                        del buffer[: self._pos]
                        self._pos = 0
                    return json.loads(body), length
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the server closed its output")
            buffer += chunk

    def request(self, method: str, params: Any) -> tuple[Any, int, float]:
        """The result, the answer's size in bytes, and the seconds until it was read."""
        self._next_id += 1
        number = self._next_id
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        while True:
            message, size = self.read()
            if message.get("id") == number and "method" not in message:
                seconds = time.perf_counter() - started
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result"), size, seconds
            if "method" in message and "id" in message:  # a request to the client
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def initialize(self, workspace: Path, settings: dict[str, Any]) -> Any:
        """`initialize` with one workspace folder and these settings (`initialized` not sent)."""
        result, _, _ = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": workspace.as_uri(),
                "capabilities": {},
                "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
                "initializationOptions": {"settings": settings},
            },
        )
        return result

    def cpu_seconds(self) -> float:
        """The server's CPU time so far (user + system, from /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status_mb(self, field: str) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e3
        return 0.0

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.process.wait(timeout=10)
        except (OSError, RuntimeError, EOFError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def sim_process(script: Path) -> Iterator[str]:
    """`agent-server sim` in its own process on a free port, playing `script`: its base URL."""
    sim = subprocess.Popen(
        [sys.executable, "-m", "agent_server", "sim", "--port", "0", "--scenario", str(script)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert sim.stderr is not None
        base = ""
        while not base:
            line = sim.stderr.readline()
            if not line:
                raise RuntimeError("the simulator did not start")
            if "listening on " in line:
                base = line.split("listening on ")[1].split()[0]
        yield base
    finally:
        sim.terminate()
        sim.wait()


def started_server(built: dict[str, Any]) -> RawClient:
    """`agent-server serve` on stdio with the ledger's workspace and sessions, `initialize`
    answered (`initialized` not sent yet)."""
    workspace = Path(built["workspace"])
    client = RawClient(SERVE)
    settings = {
        "provider": "sim",
        "baseUrl": "http://127.0.0.1:9",
        "model": MODEL,
        "sessionsDir": built["sessions"],
    }
    client.initialize(workspace, settings)
    return client


def lsp_load(built: dict[str, Any]) -> dict[str, Any]:
    """The load of the long session in a server that has loaded everything it loads in the
    background (the SDKs): first a 10-entry session, twice, then the long one."""
    workspace = Path(built["workspace"])
    client = started_server(built)
    try:
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        client.request("agent/session/list", {"workspaceUri": workspace.as_uri()})
        # The first load waits for the agent; the SDKs load in the background meanwhile.
        client.request("agent/session/load", {"sessionId": built["short"]})
        settled(client)
        _, short_size, short_seconds = client.request(
            "agent/session/load", {"sessionId": built["short"]}
        )
        idle = client.status_mb("VmRSS")
        cpu_before = client.cpu_seconds()
        result, size, seconds = client.request("agent/session/load", {"sessionId": built["long"]})
        cpu = client.cpu_seconds() - cpu_before
        peak = client.status_mb("VmHWM")
        _, again_size, again_seconds = client.request(
            "agent/session/load", {"sessionId": built["long"]}
        )
        transcript = result.get("transcript") or result.get("items") or []
        pages: list[float] = []
        page_items = 0
        cursor = result.get("cursor") if isinstance(result, dict) else None
        while cursor:
            page, _, page_seconds = client.request(
                "agent/session/history",
                {"sessionId": built["long"], "before": cursor, "limit": 200},
            )
            pages.append(page_seconds)
            page_items += len(page["transcript"])
            cursor = page.get("cursor")
        held = client.status_mb("VmRSS")
    finally:
        client.close()
    return {
        "short_seconds": short_seconds,
        "short_bytes": short_size,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "bytes": size,
        "items": len(transcript),
        "again_seconds": again_seconds,
        "again_bytes": again_size,
        "idle_mb": idle,
        "peak_above_idle_mb": peak - idle,
        "held_above_idle_mb": held - idle,
        "history_pages": len(pages),
        "history_items": page_items,
        "history_page_median_s": statistics.median(pages) if pages else None,
        "history_page_max_s": max(pages) if pages else None,
    }


def settled(client: RawClient, quiet: float = 0.5, limit: float = 60.0) -> None:
    """Wait until the server's CPU time stops growing for `quiet` seconds (what it loads in
    the background is loaded), at most `limit` seconds."""
    deadline = time.monotonic() + limit
    last = client.cpu_seconds()
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = client.cpu_seconds()
        if now - last < 0.01:
            return
        last = now


def lsp_load_at_start(built: dict[str, Any], session: str = "long") -> dict[str, Any]:
    """`agent/session/load` sent right after `initialized`, as an editor restoring its
    session at start does: the time from `initialized` written to the answer read, the
    server's CPU over that time (whatever its threads did), its peak RSS (VmHWM, reset when
    the kernel lets us) above its RSS once `initialize` was answered; then the same load
    again once the server has settled."""
    client = started_server(built)
    try:
        with contextlib.suppress(OSError):
            Path(f"/proc/{client.process.pid}/clear_refs").write_text("5")
        idle = client.status_mb("VmRSS")
        cpu_before = client.cpu_seconds()
        started = time.perf_counter()
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        result, size, _ = client.request("agent/session/load", {"sessionId": built[session]})
        seconds = time.perf_counter() - started
        cpu = client.cpu_seconds() - cpu_before
        peak = client.status_mb("VmHWM")
        held = client.status_mb("VmRSS")
        settled(client)
        _, _, again_seconds = client.request("agent/session/load", {"sessionId": built[session]})
    finally:
        client.close()
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "bytes": size,
        "items": len(result.get("transcript") or []),
        "idle_mb": idle,
        "peak_above_idle_mb": peak - idle,
        "held_above_idle_mb": held - idle,
        "again_seconds": again_seconds,
    }


def load_at_start(built: dict[str, Any]) -> dict[str, Any]:
    """The load right after `initialized` with the index, then with it removed (after which
    the server stores it again). A first load, not measured, makes sure the index this
    revision writes is there."""
    lsp_load_at_start(built)
    with_index = lsp_load_at_start(built)
    forget_index(built)
    return {"index": with_index, "no_index": lsp_load_at_start(built)}


# --- notifications, timed in the server --------------------------------------------------------


def _notify_here(mode: str, count: int) -> dict[str, Any]:
    """In a fresh interpreter: `count` text chunks through the server's path (`mode`
    "server") or through pygls's notify and stdout writer ("pygls"), to a pipe that a child
    process drains."""
    from agent_server.agent.events import TextChunk
    from agent_server.lsp import server as server_module

    read_end, write_end = os.pipe()
    drain = subprocess.Popen(
        [sys.executable, "-c", "import os,sys\nwhile os.read(0, 1<<20): pass"],
        stdin=read_end,
    )
    os.close(read_end)
    stdout = os.fdopen(write_end, "wb", buffering=0)
    server = server_module.create_server()
    chunks = [TextChunk("turn", "turn.1", f"word{n} ") for n in range(count)]

    async def run() -> float:
        outbox_type = getattr(server_module, "Outbox", None)
        if mode == "server" and outbox_type is not None:
            outbox = outbox_type(stdout)
            server.attach_outbox(outbox)
            started = time.perf_counter()
            for number, chunk in enumerate(chunks):
                server.relay("session", chunk)
                if number % BURST == BURST - 1:
                    await asyncio.sleep(0)  # as between two reads of the model's stream
            await outbox.drained()
            return time.perf_counter() - started
        from pygls.io_ import StdoutWriter

        server.protocol.set_writer(StdoutWriter(stdout))
        started = time.perf_counter()
        if mode == "server":
            for number, chunk in enumerate(chunks):
                server.relay("session", chunk)
                if number % BURST == BURST - 1:
                    await asyncio.sleep(0)
        else:
            from agent_server.lsp import items

            for number, chunk in enumerate(chunks):
                update = items.update_json(chunk)
                server.protocol.notify(
                    "agent/update",
                    {"sessionId": "session", "turnId": "turn", "seq": number, "update": update},
                )
                if number % BURST == BURST - 1:
                    await asyncio.sleep(0)
        return time.perf_counter() - started

    seconds = asyncio.run(run())
    stdout.close()
    drain.wait()
    return {"mode": mode, "count": count, "seconds": seconds, "per_second": count / seconds}


PROMPT = "Stream a long answer."


def streamed_turn(long_tokens: int = 15_000, repeat: int = 5) -> dict[str, Any]:
    """Real turns: `agent-server serve` streams a 15k-token answer from `agent-server sim`
    (each in its own process) to a raw client that only reads, `repeat` times in one session
    after a short turn; the rate at which `agent/update` notifications arrive, first to last
    (the median over the turns), and the server's CPU time for the turns (per text delta the
    simulator sent: what the relay costs per event; the sum over the turns, as /proc counts
    CPU in 10 ms ticks)."""
    from benchmarks.editor_bench import scenario

    turns = scenario(1, long_tokens)
    long_turn = turns["turns"].pop()
    turns["turns"] += [{**long_turn, "user": f"{PROMPT} ({n})"} for n in range(repeat)]
    with tempfile.TemporaryDirectory(prefix="stream-bench-") as scratch:
        root = Path(scratch)
        script = root / "scenario.json"
        script.write_text(json.dumps(turns), "utf-8")
        with sim_process(script) as base:
            workspace = root / "workspace"
            workspace.mkdir()
            client = RawClient(SERVE)
            try:
                settings = {
                    "provider": "sim",
                    "baseUrl": base,
                    "model": MODEL,
                    "sessionsDir": str(root / "sessions"),
                    "permissions": {"mode": "allowAll"},
                }
                client.initialize(workspace, settings)
                client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
                created, _, _ = client.request(
                    "agent/session/new", {"workspaceUri": workspace.as_uri()}
                )
                # A short turn first (the first call of a process makes its HTTP client),
                # and the server left to finish what it loads in the background.
                client.request(
                    "agent/turn",
                    {"sessionId": created["sessionId"], "prompt": "Latency probe 0: say hello."},
                )
                settled(client)
                cpu = 0.0
                rates: list[float] = []
                updates = characters = 0
                for number in range(repeat):
                    cpu_before = client.cpu_seconds()
                    arrivals = _stream_one(
                        client, created["sessionId"], f"{PROMPT} ({number})", f"turn{number}"
                    )
                    cpu += client.cpu_seconds() - cpu_before
                    updates += len(arrivals)
                    characters += sum(size for _, size in arrivals)
                    if len(arrivals) > 1:
                        span = arrivals[-1][0] - arrivals[0][0]
                        rates.append((len(arrivals) - 1) / span if span else 0.0)
            finally:
                client.close()
    deltas = repeat * long_tokens / 8  # the simulator sends 8 tokens a text delta
    return {
        "turns": repeat,
        "updates": updates,
        "characters": characters,
        "server_cpu_seconds": cpu,
        # The events the server decoded and relayed, per second of its CPU.
        "deltas_per_cpu_second": deltas / cpu if cpu else 0.0,
        "cpu_us_per_delta": cpu / deltas * 1e6,
        "characters_per_cpu_second": characters / cpu if cpu else 0.0,
        "per_second": statistics.median(rates) if rates else 0.0,
    }


def _stream_one(
    client: RawClient, session: str, prompt: str, turn_id: str
) -> list[tuple[float, int]]:
    """One long answer's turn: when each text chunk arrived, and its length."""
    client.send(
        {
            "jsonrpc": "2.0",
            "id": turn_id,
            "method": "agent/turn",
            "params": {"sessionId": session, "prompt": prompt},
        }
    )
    arrivals: list[tuple[float, int]] = []
    while True:
        message, _ = client.read()
        if message.get("id") == turn_id:
            if "error" in message:
                raise RuntimeError(f"the turn failed: {message['error']}")
            return arrivals
        if message.get("method") == "agent/update":
            update = message["params"]["update"]
            if update["kind"] == "messageChunk":
                arrivals.append((time.perf_counter(), len(update["content"]["text"])))


# --- cold start ---------------------------------------------------------------------------------


def _time_to_answer(command: Sequence[str], initialize: bool) -> tuple[float, float]:
    """Wall seconds until the answer (or the exit), and the child's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    client = RawClient(command)
    try:
        if initialize:
            client.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": None, "capabilities": {}},
                }
            )
            client.read()
        else:
            client.process.wait()
        seconds = time.perf_counter() - started
    finally:
        if client.process.poll() is None:
            client.process.kill()
        client.process.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, cpu


def cold_start(repeat: int = 7) -> dict[str, Any]:
    serve = SERVE
    bare = [sys.executable, "-c", "pass"]
    _time_to_answer(serve, True)  # the first start fills the compiled-code cache
    times = [_time_to_answer(serve, True) for _ in range(repeat)]
    bases = [_time_to_answer(bare, False) for _ in range(repeat)]
    return {
        "median_s": statistics.median(t for t, _ in times),
        "min_s": min(t for t, _ in times),
        "cpu_median_s": statistics.median(c for _, c in times),
        "python_median_s": statistics.median(t for t, _ in bases),
    }


# --- the run ------------------------------------------------------------------------------------


def run(
    entries: int, ledger_dir: Path | None, progress: Any = print, *, quick: bool = False
) -> dict[str, Any]:
    """Every figure for a session of `entries` entries (`quick`: fewer repeats and updates)."""
    started = time.perf_counter()
    notifications = 5_000 if quick else NOTIFICATIONS
    scratch = None
    if ledger_dir is None:
        scratch = tempfile.TemporaryDirectory(prefix="long-session-bench-")
        ledger_dir = Path(scratch.name)
    try:
        progress(f"long sessions: building {entries:,} entries")
        built = build(ledger_dir, entries)
        forget_index(built)
        progress("long sessions: open in a fresh process (first, then again)")
        first = in_fresh_process("open", built)
        again = in_fresh_process("open", built)
        baseline = in_fresh_process("read-all", built)
        again["mb_per_turn"] = None if quick else turns_on_a_copy(built)
        pi = None if quick else pi_open(built)
        progress("long sessions: agent/session/load over stdio")
        load = lsp_load(built)
        progress("long sessions: the load right after start, with and without the index")
        at_start = load_at_start(built)
        independent = None
        if not quick:
            progress(f"long sessions: an independent ledger of {entries:,} entries")
            other = build_independent(ledger_dir / "independent", entries)
            independent = {"file_mb": other["file_mb"], **load_at_start(other)}
        progress("long sessions: notifications")
        server_notify = in_fresh_process(f"notify:server:{notifications}", built)
        pygls_notify = in_fresh_process(f"notify:pygls:{notifications}", built)
        stream = streamed_turn(3_000, 1) if quick else streamed_turn()
        progress("long sessions: cold start")
        cold = cold_start(3 if quick else 7)
    finally:
        if scratch is not None:
            scratch.cleanup()
    return {
        "entries": entries,
        "file_mb": built["file_mb"],
        "open_first": first,
        "open": again,
        "read_all": baseline,
        "pi_open": pi,
        "load": load,
        "load_at_start": at_start,
        "independent": independent,
        "notify": server_notify,
        "notify_pygls": pygls_notify,
        "stream": stream,
        "cold_start": cold,
        "seconds": time.perf_counter() - started,
    }


def loads_only(entries: int, ledger_dir: Path | None) -> dict[str, Any]:
    """`--only load`: the loads of `run`, on both ledgers."""
    with tempfile.TemporaryDirectory(prefix="long-session-bench-") as scratch:
        directory = ledger_dir or Path(scratch)
        built = build(directory, entries)
        other = build_independent(directory / "independent", entries)
        return {
            "entries": entries,
            "file_mb": built["file_mb"],
            "load": lsp_load(built),
            "load_at_start": load_at_start(built),
            "independent": {"file_mb": other["file_mb"], **load_at_start(other)},
        }


GOAL_OPEN_SECONDS = 0.5
GOAL_OPEN_MB = 100
GOAL_LOAD_SECONDS = 0.3
GOAL_UPDATES_PER_SECOND = 10_000
GOAL_COLD_START_SECONDS = 0.5


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals against this run's figures."""
    size = f"{result['entries']:,} entries"
    opened, load = result["open"], result["load"]
    notify, cold = result["notify"], result["cold_start"]
    return [
        {
            "goal": f"open a session of {size} under {GOAL_OPEN_SECONDS} s and "
            f"{GOAL_OPEN_MB} MB above the idle server",
            "figure": f"{opened['seconds']:.3f} s, peak +{opened['peak_above_idle_mb']:.0f} MB",
            "met": opened["seconds"] < GOAL_OPEN_SECONDS
            and opened["peak_above_idle_mb"] < GOAL_OPEN_MB,
        },
        {
            "goal": f"agent/session/load of {size} under {GOAL_LOAD_SECONDS} s",
            "figure": f"{load['seconds']:.3f} s ({load['bytes'] / 1e3:,.0f} kB)",
            "met": load["seconds"] < GOAL_LOAD_SECONDS,
        },
        {
            "goal": f"at least {GOAL_UPDATES_PER_SECOND:,} agent/update per second at the server",
            "figure": f"{notify['per_second']:,.0f} per second",
            "met": notify["per_second"] >= GOAL_UPDATES_PER_SECOND,
        },
        {
            "goal": f"cold start to the initialize answer under {GOAL_COLD_START_SECONDS} s",
            "figure": f"{cold['median_s']:.3f} s (CPU {cold['cpu_median_s']:.3f} s)",
            "met": cold["median_s"] < GOAL_COLD_START_SECONDS,
        },
    ]


def at_start_lines(result: dict[str, Any]) -> list[str]:
    """The loads sent right after `initialized` (with the index, without), on this run's
    ledgers."""
    lines = []
    cases = [("", result.get("load_at_start"))]
    if result.get("independent"):
        cases.append(
            (
                f"independent ledger ({result['independent']['file_mb']:.0f} MB), ",
                result["independent"],
            )
        )
    for label, case in cases:
        if not case:
            continue
        for key, name in (("index", "right after initialized"), ("no_index", "no index")):
            figure = case[key]
            lines.append(
                f"  {label}{name}: {figure['seconds']:.3f} s (server CPU "
                f"{figure['cpu_seconds']:.2f} s), peak +{figure['peak_above_idle_mb']:.0f} MB "
                f"above the server after initialize ({figure['idle_mb']:.0f} MB); "
                f"again {figure['again_seconds']:.3f} s"
            )
    return lines


def format_report(result: dict[str, Any]) -> str:
    first, again, base, load = (
        result["open_first"],
        result["open"],
        result["read_all"],
        result["load"],
    )
    lines = [
        f"long session: {result['entries']:,} entries, {result['file_mb']:.1f} MB",
        f"open, first (no index): {first['seconds']:.3f} s, peak +{first['peak_above_idle_mb']:.0f}"
        f" MB, held +{first['held_above_idle_mb']:.0f} MB (idle {first['idle_mb']:.0f} MB)",
        f"open, again:            {again['seconds']:.3f} s, peak +{again['peak_above_idle_mb']:.0f}"
        f" MB, held +{again['held_above_idle_mb']:.0f} MB (CPU {again['cpu_seconds']:.3f} s)",
        (
            f"  memory per turn after open: {again['mb_per_turn'] * 1e3:+.1f} kB "
            "(300 turns, a compaction every 25)"
            if again["mb_per_turn"] is not None
            else "  memory per turn: not measured (--quick)"
        ),
        f"  baseline, json.loads of every line: {base['seconds']:.3f} s, "
        f"peak +{base['peak_above_idle_mb']:.0f} MB",
    ]
    pi = result.get("pi_open")
    if pi is None:
        lines.append("  pi: not installed, or --quick (skipped)")
    elif "error" in pi:
        lines.append(f"  pi: failed ({pi['error']})")
    else:
        lines.append(
            f"  pi SessionManager.open: {pi['seconds']:.3f} s, peak {pi['peak_mb']:.0f} MB"
        )
    lines += [
        f"agent/session/load: {load['seconds']:.3f} s, {load['bytes'] / 1e6:.2f} MB, "
        f"{load['items']} items, server CPU {load['cpu_seconds']:.2f} s; "
        f"server peak +{load['peak_above_idle_mb']:.0f} MB "
        f"(idle {load['idle_mb']:.0f} MB), held +{load['held_above_idle_mb']:.0f} MB",
        f"  again: {load['again_seconds']:.3f} s; baseline, a 10-entry session: "
        f"{load['short_seconds']:.3f} s ({load['short_bytes'] / 1e3:.1f} kB)",
    ]
    lines += at_start_lines(result)
    if load["history_pages"]:
        lines.append(
            f"  agent/session/history: {load['history_pages']} pages, "
            f"{load['history_items']} items, median {load['history_page_median_s'] * 1e3:.1f} ms"
            f", max {load['history_page_max_s'] * 1e3:.1f} ms"
        )
    notify, pygls_notify, cold = result["notify"], result["notify_pygls"], result["cold_start"]
    lines += [
        f"agent/update at the server: {notify['per_second']:,.0f} per second "
        f"({notify['count']:,} in {notify['seconds']:.3f} s); baseline, pygls notify + "
        f"flush each: {pygls_notify['per_second']:,.0f} per second",
        f"  a real turn (sim and server in their own processes, a raw reader): "
        f"{result['stream']['per_second']:,.0f} updates per second "
        f"({result['stream']['updates']:,} chunks over {result['stream']['turns']} turns); "
        f"server CPU {result['stream']['cpu_us_per_delta']:.0f} us per streamed delta "
        f"({result['stream']['deltas_per_cpu_second']:,.0f} per CPU-second)",
        f"cold start to the initialize answer: median {cold['median_s']:.3f} s "
        f"(min {cold['min_s']:.3f}, CPU {cold['cpu_median_s']:.3f} s); baseline, "
        f"python -c pass: {cold['python_median_s']:.3f} s",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--child":
        what, built = args[1], json.loads(args[2])
        if what == "open":
            print(json.dumps(_open_here(built)))
        elif what == "read-all":
            print(json.dumps(_read_all_here(built)))
        else:
            _, mode, count = what.split(":")
            print(json.dumps(_notify_here(mode, int(count))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--ledger-dir", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--only",
        choices=("load", "stream"),
        help="load: only agent/session/load (after the SDKs, right after start, no index), "
        "on the benchmark's ledger and on an independent one; stream: only the streamed turn",
    )
    options = parser.parse_args(args)
    if options.only == "stream":
        print(json.dumps(streamed_turn(), indent=2))
        return
    if options.only == "load":
        result = loads_only(options.entries, options.ledger_dir)
        print(json.dumps(result, indent=2))
        if options.json:
            options.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
        return
    result = run(options.entries, options.ledger_dir)
    print(format_report(result))
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
