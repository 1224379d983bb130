"""The empty directory and file a sandbox binds as placeholders do not outlive their process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_server.agent.tools.protected_paths import remove_stale_empties

MAKE_EMPTIES = (
    "from agent_server.agent.tools.protected_paths import empty_directory\n"
    "print(empty_directory().parent, flush=True)\n"
)


def _run(code: str, temp_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(temp_dir)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_process_removes_its_empties_when_it_exits(tmp_path: Path) -> None:
    done = _run(MAKE_EMPTIES, tmp_path)
    assert done.returncode == 0, done.stderr
    parent = Path(done.stdout.strip())
    assert parent.parent == tmp_path
    assert not parent.exists()


def test_the_empties_of_a_killed_process_are_removed_by_the_next(tmp_path: Path) -> None:
    killed = _run(MAKE_EMPTIES + "import os\nos._exit(0)\n", tmp_path)  # no exit handlers
    left = Path(killed.stdout.strip())
    assert left.is_dir()
    assert (left / "dir").is_dir()
    survivor = tmp_path / f"agent-server-empty-{os.getpid()}-mine"
    survivor.mkdir()  # a running process's own
    assert remove_stale_empties(tmp_path) == [left]
    assert not left.exists()
    assert survivor.is_dir()
