"""FileWatch on big and growing files (issue 49, item 1): a file the agent read is known by
what its size allows, a big one by its size, times and inode, never read whole; a log that
keeps growing is told to the editor once until the agent sees it again."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent_server.agent import file_watch
from agent_server.agent.file_watch import HASH_LIMIT, FileWatch


def test_a_small_file_saved_unchanged_is_no_change_and_an_edit_is(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("one\n")
    watch = FileWatch(tmp_path)
    watch.record(notes)
    notes.write_text("one\n")  # saved again, same content, new time
    os.utime(notes, ns=(1, 1))
    assert watch.take_changes() == []
    notes.write_text("two\n")
    assert watch.take_changes() == ["notes.md"]


def test_a_big_file_is_never_read_whole_and_its_changes_are_still_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"x" * (HASH_LIMIT + 1))
    read_whole: list[Path] = []
    original = Path.read_bytes

    def spy(path: Path) -> bytes:
        read_whole.append(path)
        return original(path)

    monkeypatch.setattr(Path, "read_bytes", spy)
    watch = FileWatch(tmp_path)
    watch.record(log)
    assert watch.take_changes() == []
    with log.open("ab") as out:
        out.write(b"one more line\n")
    assert watch.take_changes() == ["app.log"]
    assert watch.take_changes() == []  # told once
    assert read_whole == []
    # Replaced by a file of the same size (a rotation): a new inode, a change.
    log.rename(tmp_path / "app.log.1")
    log.write_bytes(b"y" * (HASH_LIMIT + 15))
    assert watch.take_changes() == ["app.log"]


async def test_a_growing_log_is_told_to_the_editor_once_until_the_agent_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_watch, "HASH_LIMIT", 16)  # so that the log counts as big
    log = tmp_path / "server.log"
    log.write_text("started\n")
    told: list[str] = []
    watch = FileWatch(tmp_path, told.append)
    watch.record(log)
    watch.start()
    try:
        for n in range(300):  # until the watcher, started in the background, tells
            with log.open("a") as out:
                out.write(f"line {n}\n")
            await asyncio.sleep(0.1)
            if told:
                break
        for n in range(5):  # the log goes on growing: nothing more to tell
            with log.open("a") as out:
                out.write(f"more {n}\n")
            await asyncio.sleep(0.3)
        assert told == ["server.log"]
        watch.record(log)  # the agent reads it again: the next change is news again
        with log.open("a") as out:
            out.write("after the read\n")
        await wait_for(lambda: len(told) == 2)
        assert told == ["server.log", "server.log"]
    finally:
        await watch.stop()


async def wait_for(condition: object, limit: float = 30.0) -> None:
    assert callable(condition)
    deadline = asyncio.get_running_loop().time() + limit
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.05)
