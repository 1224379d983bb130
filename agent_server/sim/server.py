"""Running a Simulator over HTTP: in-process (async or on a thread) and from the command line.

    async with SimServer(Simulator()) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="sim")
        openai = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sim")

    handle = SimServer(Simulator()).run_in_thread()   # for synchronous callers
    ...
    handle.stop()

Port 0 (the default) picks a free port on 127.0.0.1. An embedded server leaves the process's
signal handlers and logging configuration alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import uvicorn

from agent_server.sim.faults import FaultSpecError
from agent_server.sim.scenario import ScenarioError
from agent_server.sim.simulator import Simulator

__all__ = ["SimServer", "Simulator", "ThreadedSimServer", "run_cli"]

_START_TIMEOUT = 10.0


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that does not take over the process's signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _config(simulator: Simulator, *, embedded: bool) -> uvicorn.Config:
    return uvicorn.Config(
        simulator.app,
        log_level="warning",
        log_config=None if embedded else uvicorn.config.LOGGING_CONFIG,
        access_log=False,
        http="h11",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )


def _bind(host: str, port: int) -> socket.socket:
    # IPPROTO_TCP, not 0: asyncio disables Nagle's algorithm (TCP_NODELAY) only on sockets
    # whose proto says TCP, and with Nagle on, every response waited ~40 ms for a delayed ACK
    # between its headers and its body.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class SimServer:
    """A Simulator served by uvicorn in the current event loop."""

    def __init__(self, simulator: Simulator | None = None, *, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.simulator = simulator if simulator is not None else Simulator()
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._socket: socket.socket | None = None

    @property
    def base_url(self) -> str:
        """The Anthropic SDK's base URL; the OpenAI SDK's is this plus `/v1`."""
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        if self._task is not None:
            return
        self._socket = _bind(self.host, self.port)
        self.port = self._socket.getsockname()[1]
        self._server = _EmbeddedServer(_config(self.simulator, embedded=True))
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _START_TIMEOUT
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise RuntimeError("the simulator's server stopped while starting")
            if loop.time() > deadline:
                raise RuntimeError("the simulator's server did not start within 10 s")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        try:
            await self._task
        finally:
            self._task = None
            self._server = None
            if self._socket is not None:
                self._socket.close()
                self._socket = None

    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def run_in_thread(self) -> ThreadedSimServer:
        """Serve on a thread of its own (with its own event loop); returns once listening."""
        handle = ThreadedSimServer(self)
        handle.start()
        return handle


class ThreadedSimServer:
    """A SimServer running on a daemon thread, for synchronous callers."""

    def __init__(self, server: SimServer) -> None:
        self.server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def simulator(self) -> Simulator:
        return self.server.simulator

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agent-server-sim", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT):
            raise RuntimeError("the simulator's server did not start within 10 s")
        if self._error is not None:
            raise RuntimeError(f"the simulator's server failed to start: {self._error}")

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stopped.wait()
        await self.server.stop()

    def stop(self) -> None:
        if self._loop is None or self._thread is None or self._stopped is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop may already be closed
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout=_START_TIMEOUT)
        self._thread = None

    def __enter__(self) -> ThreadedSimServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def run_cli(args: argparse.Namespace) -> int:
    """`agent-server sim --port N [--scenario FILE] [--faults SPEC] [--log FILE]
    [--summariser faithful|lossy] [--summary-chars N]`."""
    try:
        simulator = Simulator(
            scenario=Path(args.scenario) if args.scenario else None,
            faults=args.faults,
            log_path=Path(args.log) if args.log else None,
            summariser=getattr(args, "summariser", None) or "faithful",
            summary_chars=getattr(args, "summary_chars", None),
        )
    except (ScenarioError, FaultSpecError, ValueError) as exc:
        print(f"agent-server sim: {exc}", file=sys.stderr)
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"agent-server sim: cannot listen on {args.host}:{args.port}: {exc.strerror}",
              file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    base = f"http://{args.host}:{port}"
    print(
        f"agent-server sim: listening on {base} (scenario {simulator.scenario.name!r}, "
        f"{len(simulator.scenario.turns)} turns)\n"
        f"  Anthropic base URL: {base}\n  OpenAI base URL:    {base}/v1\n"
        f"  models: {', '.join(simulator.registry.ids())}",
        file=sys.stderr,
        flush=True,
    )
    server = uvicorn.Server(_config(simulator, embedded=False))
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        simulator.close()
    return 0
