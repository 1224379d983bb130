"""The fuzz run: thousands of malformed or hostile messages to one server over real stdio.

    python -m tests.hardening.fuzz [--count 10000] [--seed 24] [--acp]

One `agent-server serve` (or `agent-server acp`) connection takes `count` messages drawn at
random from the kinds below, each request with an id of its own, the client never answering
the server's own requests (a hostile client). Then it waits for 30 s of quiet and reports:
requests sent, answered with their id, answered with a null id (ids JSON-RPC cannot carry
back), unanswered, answers slower than 1 s (all, and those sent once the first session
existed, that is once the provider SDKs were loaded), the slowest; stderr bytes, lines and
tracebacks, and whether the server is still alive (one last good request). The figures in
tests/hardening/README.md come from it.

It is a measurement, not a test: the pinned cases are in test_fuzz_kinds.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.hardening.raw import read_frame

QUIET = 30.0  # seconds without a message that end the wait for answers


@dataclass
class Kind:
    name: str
    make: Callable[[random.Random, Any], tuple[bytes, Any]]  # (wire bytes, id or None)


def _odd_id(rng: random.Random, n: int) -> Any:
    return rng.choice([n + 0.5, {"n": n}, [n], True, None, -n, 2**70 + n, 1e300])


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(9 if depth < 3 else 6)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.randint(-(2**40), 2**40)
    if pick == 3:
        return rng.random() * 1e6
    if pick == 4:
        return "".join(rng.choice("ab\u202e\x00\x1b{}\"'\\ é") for _ in range(rng.randrange(12)))
    if pick == 5:
        return "file:///" + "x" * rng.randrange(3)
    if pick == 6:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["sessionId", "workspaceUri", "prompt", "id", "entryId", "model", "mode", "x"]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


# --- LSP ----------------------------------------------------------------------------------

LSP_METHODS = (
    "agent/session/new",
    "agent/session/list",
    "agent/session/load",
    "agent/session/fork",
    "agent/session/history",
    "agent/turn",
    "agent/interrupt",
    "agent/compact",
    "agent/rewind",
    "agent/rewind/preview",
    "agent/rewind/changes",
    "agent/usage",
    "agent/model/list",
    "agent/model/set",
    "agent/mode/set",
    "agent/mention/complete",
    "agent/command/list",
    "agent/problems",
    "agent/mcp/servers",
    "agent/mcp/acceptTools",
    "agent/mcp/restart",
    "workspace/executeCommand",
    "textDocument/hover",
)
LSP_NOTIFICATIONS = (
    "$/cancelRequest",
    "agent/userIdle",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWorkspaceFolders",
    "textDocument/didOpen",
    "textDocument/didClose",
    "$/setTrace",
    "window/workDoneProgress/cancel",
    "$/progress",
    "initialized",
    "agent/unknownNote",
    "$/unknownNote",
)


def lsp_frame(body: Any) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return f"Content-Length: {len(data)}\r\n\r\n".encode() + data


def _lsp_kinds(root: Path) -> list[Kind]:
    uri = root.as_uri()

    def req(method: str, params: Any, n: int) -> tuple[bytes, Any]:
        return lsp_frame({"jsonrpc": "2.0", "id": n, "method": method, "params": params}), n

    def note(method: str, params: Any) -> tuple[bytes, Any]:
        return lsp_frame({"jsonrpc": "2.0", "method": method, "params": params}), None

    return [
        Kind(
            "agent method, random params",
            lambda r, n: req(r.choice(LSP_METHODS), _random_json(r), n),
        ),
        Kind(
            "agent method, plausible params",
            lambda r, n: req(
                r.choice(LSP_METHODS),
                {
                    "sessionId": r.choice(["nope", 5, None]),
                    "workspaceUri": uri,
                    "prompt": _random_json(r),
                    "entryId": _random_json(r),
                },
                n,
            ),
        ),
        Kind(
            "odd id (fractional, object, array, bool, null, huge)",
            lambda r, n: (
                lsp_frame(
                    {
                        "jsonrpc": "2.0",
                        "id": (i := _odd_id(r, n)),
                        "method": "agent/usage",
                        "params": {"sessionId": "x"},
                    }
                ),
                i,
            ),
        ),
        Kind(
            "$/cancelRequest with an odd id",
            lambda r, n: note(
                "$/cancelRequest",
                r.choice(
                    [
                        {"id": {"a": 1}},
                        {"id": [1, 2]},
                        {"id": 1.5},
                        {"id": None},
                        {},
                        {"id": "zz"},
                        {"id": True},
                    ]
                ),
            ),
        ),
        Kind(
            "notification, random params",
            lambda r, n: note(r.choice(LSP_NOTIFICATIONS), _random_json(r)),
        ),
        Kind(
            "a response to a request never sent",
            lambda r, n: (
                lsp_frame(
                    {
                        "jsonrpc": "2.0",
                        "id": r.choice([n, "s", 1.5, {"o": 1}]),
                        **r.choice([{"result": _random_json(r)}, {"error": _random_json(r)}]),
                    }
                ),
                None,
            ),
        ),
        Kind("unknown method", lambda r, n: req("zz/" + str(n), _random_json(r), n)),
        Kind(
            "notification method with an id",
            lambda r, n: req(r.choice(LSP_NOTIFICATIONS[:4]), {}, n),
        ),
        Kind("not JSON", lambda r, n: (lsp_frame(b'{"jsonrpc":"2.0","id":%d,"method":' % n), n)),
        Kind("batch", lambda r, n: (lsp_frame([{"jsonrpc": "2.0", "id": n, "method": "x"}]), n)),
        Kind("not an object", lambda r, n: (lsp_frame(r.choice([b"5", b'"s"', b"null"])), None)),
        Kind("no jsonrpc", lambda r, n: (lsp_frame({"id": n, "method": "agent/usage"}), n)),
        Kind(
            "method not a string",
            lambda r, n: (lsp_frame({"jsonrpc": "2.0", "id": n, "method": _odd_id(r, n)}), n),
        ),
        Kind(
            "invalid UTF-8",
            lambda r, n: (lsp_frame(b'{"jsonrpc":"2.0","id":%d,"method":"a\xff"}' % n), n),
        ),
    ]


# --- ACP ----------------------------------------------------------------------------------

ACP_METHODS = (
    "session/new",
    "session/load",
    "session/list",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "authenticate",
    "initialize",
    "fs/read_text_file",
    "_agent/unknown",
)
ACP_NOTIFICATIONS = ("session/cancel", "_agent/note", "session/unknown", "zz", "$/cancel_request")


def acp_line(body: Any) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return data + b"\n"


def _acp_kinds(root: Path) -> list[Kind]:
    def req(method: str, params: Any, n: int) -> tuple[bytes, Any]:
        return acp_line({"jsonrpc": "2.0", "id": n, "method": method, "params": params}), n

    def note(method: str, params: Any) -> tuple[bytes, Any]:
        return acp_line({"jsonrpc": "2.0", "method": method, "params": params}), None

    return [
        Kind("method, random params", lambda r, n: req(r.choice(ACP_METHODS), _random_json(r), n)),
        Kind(
            "method, plausible params",
            lambda r, n: req(
                r.choice(ACP_METHODS),
                {
                    "sessionId": r.choice(["nope", 5, None]),
                    "cwd": str(root),
                    "mcpServers": [],
                    "prompt": _random_json(r),
                    "protocolVersion": r.choice([1, "x"]),
                },
                n,
            ),
        ),
        Kind(
            "odd id",
            lambda r, n: (
                acp_line(
                    {
                        "jsonrpc": "2.0",
                        "id": (i := _odd_id(r, n)),
                        "method": "session/list",
                        "params": {},
                    }
                ),
                i,
            ),
        ),
        Kind(
            "notification, random params",
            lambda r, n: note(r.choice(ACP_NOTIFICATIONS), _random_json(r)),
        ),
        Kind(
            "session/cancel without a session",
            lambda r, n: note(
                "session/cancel", r.choice([{}, None, {"sessionId": 5}, {"sessionId": "nope"}])
            ),
        ),
        Kind(
            "a response to a request never sent",
            lambda r, n: (
                acp_line(
                    {
                        "jsonrpc": "2.0",
                        "id": r.choice([n, "s", 1.5, {"o": 1}]),
                        **r.choice([{"result": _random_json(r)}, {"error": _random_json(r)}]),
                    }
                ),
                None,
            ),
        ),
        Kind("unknown method", lambda r, n: req("zz/" + str(n), _random_json(r), n)),
        Kind("not JSON", lambda r, n: (b'{"jsonrpc":"2.0","id":%d,"method":\n' % n, None)),
        Kind("not an object", lambda r, n: (acp_line(r.choice([b"5", b"[1]", b"null"])), None)),
        Kind(
            "method not a string",
            lambda r, n: (acp_line({"jsonrpc": "2.0", "id": n, "method": _odd_id(r, n)}), n),
        ),
    ]


# --- the run ------------------------------------------------------------------------------


@dataclass
class Tally:
    sent: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    answered_null: int = 0
    slowest: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    slow: list[tuple[float, str, Any, float]] = field(default_factory=list)  # over 1 s
    unreadable: int = 0  # requests whose id JSON-RPC cannot use: a null-id answer each
    unanswered: list[tuple[str, Any]] = field(default_factory=list)


def _method_of(data: bytes) -> str:
    body = data.split(b"\r\n\r\n", 1)[-1]
    try:
        method = json.loads(body).get("method")
    except (ValueError, AttributeError):
        return "?"
    return method if isinstance(method, str) else "?"


def _readable_id(msg_id: Any) -> bool:
    """An id an answer can carry back: a string or a number (JSON-RPC; LSP says integer)."""
    return isinstance(msg_id, str | int | float) and not isinstance(msg_id, bool)


def _key(msg_id: Any) -> str:
    return json.dumps(msg_id, sort_keys=True)


async def run(
    count: int, seed: int, acp: bool, root: Path, log_path: Path | None = None
) -> dict[str, Any]:
    rng = random.Random(seed)
    sessions = root / "sessions"
    settings = {"provider": "sim", "sessionsDir": str(sessions)}
    args = (
        [
            "acp",
            "--provider",
            "sim",
            "--sessions-dir",
            str(sessions),
            "--config",
            str(root / "none.json"),
        ]
        if acp
        else ["serve", "--trust-editor-settings"]
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent_server",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 26,
        cwd=root,
    )
    assert process.stdin and process.stdout and process.stderr
    stderr = bytearray()
    arrivals: dict[str, float] = {}
    null_answers = 0
    last_arrival = time.monotonic()

    async def read_err() -> None:
        assert process.stderr
        while chunk := await process.stderr.read(65536):
            stderr.extend(chunk)

    warm: list[float | None] = [None]

    async def read_out() -> None:
        nonlocal null_answers, last_arrival
        assert process.stdout
        while True:
            if acp:
                line = await process.stdout.readline()
                if not line:
                    return
                data = line
            else:
                body = await read_frame(process.stdout)
                if body is None:
                    return
                data = body
            message = json.loads(data)
            last_arrival = time.monotonic()
            if "method" in message:
                continue  # the server's notifications and requests (never answered)
            if message.get("id") is None:
                null_answers += 1
            else:
                arrivals.setdefault(_key(message["id"]), time.monotonic())
                if warm[0] is None and "sessionId" in str(message.get("result")):
                    warm[0] = time.monotonic()  # the first session made: the SDKs are loaded

    readers = [asyncio.create_task(read_err()), asyncio.create_task(read_out())]

    async def send(data: bytes) -> None:
        assert process.stdin
        process.stdin.write(data)
        await process.stdin.drain()

    if acp:
        await send(
            acp_line(
                {
                    "jsonrpc": "2.0",
                    "id": "init",
                    "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": {}},
                }
            )
        )
        kinds = _acp_kinds(root)
    else:
        await send(
            lsp_frame(
                {
                    "jsonrpc": "2.0",
                    "id": "init",
                    "method": "initialize",
                    "params": {
                        "processId": None,
                        "rootUri": root.as_uri(),
                        "capabilities": {},
                        "initializationOptions": {"settings": settings},
                    },
                }
            )
        )
        await send(lsp_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        kinds = _lsp_kinds(root)
    while _key("init") not in arrivals:  # the clock starts once the server is up
        if process.returncode is not None:
            raise SystemExit(f"the server ended: {bytes(stderr).decode(errors='replace')}")
        await asyncio.sleep(0.05)
    tally = Tally()
    started = time.monotonic()
    sent_at: dict[str, tuple[str, float, Any]] = {}
    methods: dict[str, str] = {}
    for n in range(1, count + 1):
        kind = rng.choice(kinds)
        data, msg_id = kind.make(rng, n)
        tally.sent[kind.name] += 1
        if _readable_id(msg_id):
            sent_at[_key(msg_id)] = (kind.name, time.monotonic(), msg_id)
            methods[_key(msg_id)] = _method_of(data)
        elif (
            msg_id is not None
            or kind.name == "odd id (fractional, object, array, bool, null, huge)"
        ):
            tally.unreadable += 1
        await send(data)
        if n % 50 == 0:
            await asyncio.sleep(0)
    while time.monotonic() - last_arrival < QUIET:
        await asyncio.sleep(0.5)
    for key, (name, at, msg_id) in sent_at.items():
        if key in arrivals:
            tally.answered[name] += 1
            wait = arrivals[key] - at
            tally.slowest[name] = max(tally.slowest[name], wait)
            if wait > 1.0:
                tally.slow.append((at - started, f"{name}: {methods[key]}", msg_id, wait))
        else:
            tally.unanswered.append((f"{name}: {methods[key]}", msg_id))
    probe_id = "probe-after"
    if acp:
        await send(
            acp_line({"jsonrpc": "2.0", "id": probe_id, "method": "session/list", "params": {}})
        )
    else:
        await send(
            lsp_frame(
                {
                    "jsonrpc": "2.0",
                    "id": probe_id,
                    "method": "agent/session/list",
                    "params": {"workspaceUri": root.as_uri()},
                }
            )
        )
    deadline = time.monotonic() + 30
    while _key(probe_id) not in arrivals and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    alive = _key(probe_id) in arrivals
    process.kill()
    await process.wait()
    for task in readers:
        task.cancel()
    log = bytes(stderr)
    if log_path is not None:
        await asyncio.to_thread(log_path.write_bytes, log)
    return {
        "protocol": "acp" if acp else "lsp",
        "messages": count,
        "requestsWithId": len(sent_at),
        "answeredWithId": sum(tally.answered.values()),
        "unreadableIds": tally.unreadable,
        "nullIdAnswers": null_answers,
        "unanswered": len(tally.unanswered),
        "unansweredByKind": dict(Counter(name for name, _ in tally.unanswered)),
        "unansweredExamples": [json.dumps(i) for _, i in tally.unanswered[:8]],
        "slowestAnswerSeconds": {k: round(v, 3) for k, v in sorted(tally.slowest.items())},
        "answersOver1s": len(tally.slow),
        "answersOver10s": sum(1 for _, _, _, wait in tally.slow if wait > 10),
        # Sent once the first session existed (the provider SDKs are loaded by then): the
        # figure that does not count the server's cold start.
        "answersOver1sOnceWarm": sum(
            1 for at, _, _, _ in tally.slow if warm[0] is not None and started + at > warm[0]
        ),
        "firstSessionAfterSeconds": round(warm[0] - started, 2) if warm[0] else None,
        "slowExamples": [
            f"{name} id {json.dumps(i)} sent at {at:.1f} s: {wait:.1f} s"
            for at, name, i, wait in sorted(tally.slow, key=lambda slow: -slow[3])[:8]
        ],
        "stderrBytes": len(log),
        "tracebacks": log.count(b"Traceback (most recent call last)"),
        "stderrLines": log.count(b"\n"),
        "aliveAfter": alive,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--acp", action="store_true", help="fuzz `agent-server acp` instead")
    parser.add_argument("--log", type=Path, help="also save the server's stderr here")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agent-fuzz-") as tmp:
        (Path(tmp) / "ws").mkdir()
        (Path(tmp) / "ws" / "none.json").write_text("{}")
        result = asyncio.run(
            run(options.count, options.seed, options.acp, Path(tmp) / "ws", options.log)
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
