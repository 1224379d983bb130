"""Start a test's agent from a process that has already imported it.

A test that drives the real agent over stdio started `python -m agent_server ...` afresh: about
1.5 s of CPU each, most of it imports (the anthropic SDK alone is 3,600 modules), for some 200
agents a run, a quarter of the suite's CPU. Such a test's agent is now forked from a *zygote*,
one per pytest worker, that imported the agent's modules once and starts no thread: the same
program on the same pipes, its start a fork.

`command(*args)` stands for `[sys.executable, "-m", "agent_server", *args]`. It runs this file
as a small launcher (`python -S`, standard library only) that hands the zygote its stdin,
stdout and stderr, its environment, working directory and arguments, then stands in for the
agent it forked: it passes on SIGTERM, SIGINT and SIGHUP, and exits as the agent exits; if the
launcher is killed, the zygote kills the agent. Without a zygote the launcher runs the real
command in its place. Tests of how the agent starts (imports, the first request, signals before
it runs) spawn the real command instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

_HEADER = struct.Struct("!I")
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Imported by the zygote before it forks: the agent's modules of every kind, and the SDKs.
_PRELOAD = (
    "agent_server.cli",
    "agent_server.lsp.server",
    "agent_server.acp.server",
    "agent_server.llm.anthropic",
    "agent_server.llm.openai_chat",
    "agent_server.llm.openai_responses",
    "agent_server.agent.mcp.connection",
    "agent_server.agent.mcp.stdio",
)

_zygote: tuple[subprocess.Popen[bytes], str] | None = None
_zygote_lock = threading.Lock()


def command(*args: str) -> list[str]:
    """The command line that starts `agent_server ARGS` forked from this worker's zygote."""
    return [sys.executable, "-S", __file__, "launch", _socket(), *args]


def agent_pid(pid: int) -> int:
    """The agent's pid, given the pid of the process a test started (a launcher's, or the
    real command's)."""
    if _zygote is not None:
        with contextlib.suppress(FileNotFoundError):
            return int((_agents(_zygote[1]) / str(pid)).read_text())
    return pid


def _agents(socket_path: str) -> Path:
    return Path(socket_path).parent / "agents"


def _socket() -> str:
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote[0].poll() is not None:
            home = tempfile.mkdtemp(prefix="zygote-")
            with open(os.path.join(home, "stderr"), "ab") as stderr:
                process = subprocess.Popen(
                    [sys.executable, __file__, "zygote", os.path.join(home, "socket")],
                    stdin=subprocess.DEVNULL,
                    stdout=stderr,
                    stderr=stderr,
                    cwd=Path(__file__).resolve().parent.parent,
                )
            atexit.register(_stop, process, home)
            _zygote = (process, os.path.join(home, "socket"))
        return _zygote[1]


def _stop(process: subprocess.Popen[bytes], home: str) -> None:
    process.terminate()
    process.wait()
    shutil.rmtree(home, ignore_errors=True)


# The zygote ----------------------------------------------------------------------------


def _serve(path: str) -> None:
    """Fork an agent for each launcher that connects; tell it the pid, then how it ended."""
    import gc
    import importlib

    sys.path[0] = str(Path(__file__).resolve().parent.parent)  # as `python -m` from the repo
    for module in _PRELOAD:
        importlib.import_module(module)
    assert threading.active_count() == 1, "the zygote must start no thread before it forks"
    gc.freeze()  # the agents' collections leave the zygote's objects (and shared pages) alone
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    _agents(path).mkdir()
    os.rename(path + ".new", path)  # a launcher that finds the socket finds it listening
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while os.getppid() == parent:  # the worker's end is the zygote's
        for key, _ in selector.select(timeout=1.0):
            if key.data is None:
                _accept(listener, selector)
            elif key.data[0] == "exited":
                _, pid, conn, record = key.data
                _, status = os.waitpid(pid, 0)
                record.unlink()
                selector.unregister(key.fileobj)
                os.close(key.fd)
                if conn.fileno() in selector.get_map():
                    selector.unregister(conn)
                    with contextlib.suppress(OSError):  # the launcher is going too
                        conn.sendall(b"%d\n" % status)
                conn.close()
            elif selector.get_map().get(key.fd) is key:  # (not if its agent's end, just
                # before, came in the same batch: that pid may be another process's by now,
                # and the descriptor a new launcher's)
                selector.unregister(key.fileobj)  # the launcher was killed: its agent goes too
                os.kill(key.data[1], signal.SIGKILL)


def _accept(listener: socket.socket, selector: selectors.BaseSelector) -> None:
    conn, _ = listener.accept()
    try:
        request, fds = _receive(conn)
    except (OSError, EOFError, ValueError):
        conn.close()
        return
    launcher, _, _ = struct.unpack("3i", conn.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
    ))
    held, release = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(release)
        os.read(held, 1)  # until the zygote has said which agent stands behind the launcher
        os.close(held)
        _become(request, fds, selector, conn)  # never returns
    os.close(held)
    for fd in fds:
        os.close(fd)
    record = _agents(listener.getsockname()) / str(launcher)
    record.with_suffix(".new").write_text(str(pid))
    record.with_suffix(".new").rename(record)
    os.close(release)
    selector.register(os.pidfd_open(pid), selectors.EVENT_READ, ("exited", pid, conn, record))
    try:
        conn.sendall(b"%d\n" % pid)
    except OSError:  # the launcher was killed already
        os.kill(pid, signal.SIGKILL)
    else:
        selector.register(conn, selectors.EVENT_READ, ("launcher gone", pid))


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds = b"", list[int]()
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        chunk, ancillary, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
        if not chunk:
            raise EOFError("the launcher closed before its request")
        data += chunk
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += struct.unpack(f"{len(payload) // 4}i", payload)
    return json.loads(data[_HEADER.size:]), fds


def _become(
    request: dict[str, Any], fds: list[int], selector: selectors.BaseSelector, conn: socket.socket
) -> None:
    """In the forked child: take the launcher's stdio, environment, directory and arguments,
    and run the agent as `python -m agent_server` does."""
    import runpy

    for key in list(selector.get_map().values()):  # the zygote's sockets and pidfds
        if isinstance(key.fileobj, socket.socket):
            key.fileobj.close()
        else:
            os.close(key.fd)
    selector.close()
    conn.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # found again from the agent's TMPDIR (an import asked the zygote's)
    sys.path[0] = request["cwd"]
    sys.argv = ["agent_server", *request["args"]]
    try:
        runpy.run_module("agent_server", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as end:
        code = _exit_code(end.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    # The interpreter's own exit, but for tearing down the zygote's thousands of modules (a
    # second or more, each touching pages the fork shared): threads, atexit, the streams.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _exit_code(code: object) -> int:
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


# The launcher ----------------------------------------------------------------------------


def _launch(path: str, args: list[str]) -> None:
    for _ in range(600):  # the zygote may still be importing
        if os.path.exists(path):
            break
        time.sleep(0.1)
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:  # no zygote: the real command
        os.execv(sys.executable, [sys.executable, "-m", "agent_server", *args])
    request = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    conn.sendmsg(
        [_HEADER.pack(len(request)) + request],
        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))],
    )
    # The agent holds the pipes now, alone as a spawned agent would (stderr stays, for this).
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    reader = conn.makefile("rb")
    agent = reader.readline()
    if agent:
        for number in _FORWARDED:
            signal.signal(number, lambda number, _frame: _forward(int(agent), number))
    line = reader.readline()
    if not line:
        sys.exit("forked_agent: the zygote went away before the agent ended")
    status = int(line)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    raise SystemExit(os.waitstatus_to_exitcode(status))


def _forward(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has ended; its status is on its way
        os.kill(pid, number)


if __name__ == "__main__":
    role, path, *rest = sys.argv[1:]
    if role == "zygote":
        _serve(path)
    else:
        _launch(path, rest)
