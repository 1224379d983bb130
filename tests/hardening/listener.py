"""Unix-socket listeners outside the sandbox, recording what reaches them (issue 24's tests)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def unix_listeners(*addresses: str | bytes) -> Iterator[list[bytes]]:
    """Listen on each address (a path, or b"\\0name" for an abstract socket) until the block
    ends; the list receives the first bytes of every connection."""
    received: list[bytes] = []
    servers = []
    for address in addresses:
        server = socket.socket(socket.AF_UNIX)
        server.bind(address)
        server.listen()
        server.settimeout(0.2)
        servers.append(server)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            for server in servers:
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                with conn:
                    received.append(conn.recv(100))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        thread.join()
        for server in servers:
            server.close()
