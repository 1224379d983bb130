"""One writer per session, across processes and within one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_server.errors import SessionLockedError
from agent_server.session.ledger import Ledger
from agent_server.session.store import SessionStore

from .builders import user

OPEN_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agent_server.errors import SessionLockedError
    from agent_server.session.ledger import Ledger
    try:
        ledger = Ledger.open(Path(sys.argv[1]))
    except SessionLockedError as exc:
        print("LOCKED", exc.message)
        sys.exit(3)
    ledger.append_message(__import__("agent_server.llm.messages", fromlist=["x"])
                          .UserMessage.of_text("from the child"))
    ledger.close()
    print("OPENED")
    """
)

HOLD_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agent_server.session.ledger import Ledger
    ledger = Ledger.open(Path(sys.argv[1]))
    print("HOLDING", flush=True)
    time.sleep(60)
    """
)


def run_child(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", OPEN_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_second_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    ledger = Ledger.create(path, session_id="s1", workspace="/w")
    ledger.append_message(user("mine"))
    child = run_child(path)
    assert child.returncode == 3, child.stderr
    assert f"session s1 is open elsewhere (pid {os.getpid()}" in child.stdout
    ledger.close()
    child = run_child(path)
    assert child.returncode == 0, child.stderr
    assert "OPENED" in child.stdout
    with Ledger.open(path) as reopened:
        assert len(reopened.tree.entries) == 2


def test_a_second_ledger_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    first = Ledger.create(path, session_id="s1", workspace="/w")
    with pytest.raises(SessionLockedError, match=f"pid {os.getpid()}, this process"):
        Ledger.open(path)
    first.close()
    with Ledger.open(path):
        pass


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    Ledger.create(path, session_id="s1", workspace="/w").close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SCRIPT, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "HOLDING"
        with pytest.raises(SessionLockedError, match=f"pid {holder.pid}"):
            Ledger.open(path)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with Ledger.open(path) as ledger:
        assert ledger.load_report.clean


def test_deleting_every_other_file_cannot_steal_the_lock(tmp_path: Path) -> None:
    """The lock is on the ledger itself: no sidecar, lock file or directory a user (or a
    cleanup script) deletes lets a second process in."""
    store = SessionStore(tmp_path / "sessions", tmp_path / "workspace")
    ledger = store.create(title="held")
    ledger.append_message(user("mine"))
    ledger.sync()
    spill = store.session_dir(ledger.session_id)
    spill.mkdir(parents=True, exist_ok=True)
    (spill / "bash-1.txt").write_text("output")
    path = ledger.path
    path.with_name(path.name + ".lock").write_text("1\n")  # what older versions kept
    deleted = []
    for item in sorted(store.root.rglob("*"), reverse=True):
        if item == path or item in path.parents:
            continue
        if item.is_dir():
            item.rmdir()
        else:
            item.unlink()
        deleted.append(item.name)
    assert f"{ledger.session_id}.meta.json" in deleted and "workspace.json" in deleted
    child = run_child(path)
    assert child.returncode == 3, child.stdout + child.stderr
    assert "is open elsewhere" in child.stdout
    # Deleting the ledger itself deletes the session: there is nothing left to open.
    path.unlink()
    child = run_child(path)
    assert child.returncode != 0 and "OPENED" not in child.stdout
    ledger.close()


def test_store_delete_is_refused_while_open_and_removes_everything(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", tmp_path / "workspace")
    ledger = store.create()
    with pytest.raises(SessionLockedError):
        store.delete(ledger.session_id)
    ledger.close()
    store.delete(ledger.session_id)
    assert not any(store.root.rglob(f"{ledger.session_id}*"))
