"""The server's own files are written whole or not at all (`agent_server/whole_file.py`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agent_server.whole_file import write_whole


def test_writers_at_once_never_mix_or_lose_the_file(tmp_path: Path) -> None:
    """The LSP server lists sessions on a thread while a ledger's sync, on the event loop,
    writes the same session's list entry (store.py), and two servers may share a sessions
    folder: no write fails, mixes with another or leaves a temporary file."""
    target = tmp_path / "meta.json"
    payloads = [json.dumps({"writer": n, "pad": "x" * (1000 * n)}).encode() for n in range(8)]
    seen: list[bytes] = []
    errors: list[BaseException] = []

    def write(payload: bytes) -> None:
        try:
            for _ in range(40):
                write_whole(target, payload)
                seen.append(target.read_bytes())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert set(seen) <= set(payloads)
    assert target.read_bytes() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_a_failed_write_leaves_the_old_content_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # a rename over a directory fails
    with pytest.raises(OSError):
        write_whole(target, b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_private_unless_a_mode_is_asked(tmp_path: Path) -> None:
    write_whole(tmp_path / "private", b"1")
    write_whole(tmp_path / "shared", b"2", mode=0o644)
    assert (tmp_path / "private").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "shared").stat().st_mode & 0o777 == 0o644
