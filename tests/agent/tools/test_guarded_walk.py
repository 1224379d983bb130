"""The walk every sandboxed command pays (issue 49, item 4): what it finds below the workspace
(nested repositories, secret files) is read again only from directories that changed, and a
change is never missed, not even one whose directory's modification time was set back."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.tools import protected_paths
from agent_server.agent.tools.protected_paths import guarded_below


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Directories count as settled at once (the walk keeps a listing only of a directory
    unchanged for 2 s, against changes within one tick of the clock)."""
    monkeypatch.setattr(protected_paths, "_SETTLED_NS", -1)


def tree(root: Path) -> None:
    for folder in ("src/app", "src/lib", "docs", "vendor/tool"):
        (root / folder).mkdir(parents=True)
        (root / folder / "a.py").write_text("x = 1\n")


def test_a_new_nested_repository_or_secret_is_found_by_the_next_walk(
    tmp_path: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path)
    assert guarded_below(tmp_path) == ([], [])
    scanned: list[str] = []
    original = os.scandir

    def counting(path: Path) -> Any:
        scanned.append(str(path))
        return original(path)

    monkeypatch.setattr(os, "scandir", counting)
    assert guarded_below(tmp_path) == ([], [])
    assert scanned == []  # nothing changed: nothing listed again
    subprocess.run(["git", "init", "-q", str(tmp_path / "vendor" / "tool")], check=True)
    (tmp_path / "docs" / ".env").write_text("TOKEN=x\n")
    nested, secrets = guarded_below(tmp_path)
    monkeypatch.undo()
    assert nested == [Path("vendor/tool")] and secrets == [Path("docs/.env")]
    # Only the two directories that changed were listed again.
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in scanned) == [
        "docs", "vendor/tool"
    ]


def test_a_modification_time_set_back_does_not_hide_a_change(
    tmp_path: Path, settled: None
) -> None:
    tree(tmp_path)
    folder = tmp_path / "src" / "lib"
    before = folder.stat()
    assert guarded_below(tmp_path) == ([], [])
    (folder / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `touch -d` would
    assert folder.stat().st_mtime_ns == before.st_mtime_ns
    assert guarded_below(tmp_path)[1] == [Path("src/lib/id_rsa")]


def test_a_directory_changed_a_moment_ago_is_listed_again_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "A moment" is an hour here: a busy machine's pause after the write changes nothing.
    monkeypatch.setattr(protected_paths, "_SETTLED_NS", 3_600 * 10**9)
    tree(tmp_path)
    guarded_below(tmp_path)
    fresh = tmp_path / "src" / "app"
    (fresh / "new.py").write_text("")
    assert time.time_ns() - fresh.stat().st_mtime_ns < protected_paths._SETTLED_NS
    guarded_below(tmp_path)
    assert fresh not in protected_paths._LISTINGS or (
        protected_paths._LISTINGS[fresh][0][1] != fresh.stat().st_mtime_ns
    )
