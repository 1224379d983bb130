from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agent_server.errors import SessionError, SessionLockedError, SessionNotFoundError
from agent_server.session import store as store_module
from agent_server.session.entries import TitleEntry, utc_timestamp
from agent_server.session.ledger import Ledger
from agent_server.session.store import SessionStore, default_sessions_root, workspace_key

from .builders import assistant, user


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions", fsync="never")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "My App"
    path.mkdir(parents=True)
    return path


def meta_path(store: SessionStore, workspace: Path, session_id: str) -> Path:
    return store.workspace_dir(workspace) / f"{session_id}.meta.json"


def test_default_root_is_the_user_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    root = default_sessions_root()
    assert root.parts[-2:] == ("agent-server", "sessions")
    assert SessionStore().root == root


def test_workspace_keys_are_readable_and_distinct(tmp_path: Path) -> None:
    a = tmp_path / "one" / "app"
    b = tmp_path / "two" / "app"
    assert workspace_key(a).startswith("app-")
    assert workspace_key(a) != workspace_key(b)
    assert workspace_key(a) == workspace_key(tmp_path / "one" / ".." / "one" / "app")
    assert workspace_key(tmp_path / "My App!").startswith("My-App-")


def test_create_list_open(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, title="First", model="sim-small") as ledger:
        session_id = ledger.session_id
        ledger.append_message(user("hello"))
        ledger.append_message(assistant("hi", model="sim-small"))
    [info] = store.list(workspace)
    assert info.session_id == session_id
    assert info.title == "First"
    assert info.model == "sim-small"
    assert info.entry_count == 2
    assert info.size_bytes == info.path.stat().st_size
    assert info.workspace == str(workspace.resolve())
    assert info.path.parent == store.workspace_dir(workspace)
    assert json.loads((info.path.parent / "workspace.json").read_text()) == {
        "workspace": str(workspace.resolve())
    }
    with store.open(session_id) as reopened:
        assert len(reopened.tree.entries) == 2
        assert reopened.facts.latest_model() == "sim-small"


def test_list_is_newest_first_and_per_workspace(
    store: SessionStore, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    ids = []
    for index in range(3):
        with store.create(workspace, title=f"s{index}") as ledger:
            ids.append(ledger.session_id)
    with store.create(other, title="elsewhere") as ledger:
        elsewhere = ledger.session_id
        created = ledger.header.created_at
    # Touch the first session last: it becomes the newest. Timestamps have milliseconds: a
    # touch in the millisecond of the last creation would tie (seen under load), so the touch
    # waits for the clock to pass it, as any person's would.
    while utc_timestamp() <= created:
        time.sleep(0.001)
    with store.open(ids[0]) as ledger:
        ledger.append_message(user("again"))
    listed = [info.session_id for info in store.list(workspace)]
    assert listed[0] == ids[0]
    assert set(listed) == set(ids)
    assert [info.session_id for info in store.list(other)] == [elsewhere]
    assert {info.session_id for info in store.list()} == {*ids, elsewhere}
    assert store.list(tmp_path / "never-used") == []


def test_list_reads_the_sidecar_not_the_ledger(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.create(workspace, title="Real") as ledger:
        ledger.append_message(user("x"))
        session_id = ledger.session_id
    sidecar = meta_path(store, workspace, session_id)
    data = json.loads(sidecar.read_text())
    data["title"] = "From the sidecar"
    sidecar.write_text(json.dumps(data))

    def no_scan(*args: object) -> object:
        raise AssertionError("the ledger was scanned")

    monkeypatch.setattr(store_module, "scan_meta", no_scan)
    [info] = store.list(workspace)
    assert info.title == "From the sidecar"


def test_a_stale_sidecar_is_brought_up_to_date(store: SessionStore, workspace: Path) -> None:
    ledger = store.create(workspace, title="Old")
    session_id = ledger.session_id
    ledger.append_message(user("one"))
    ledger.sync()
    # appended but not synced: the sidecar is behind
    ledger.add(TitleEntry, "New")
    ledger.append_message(assistant("reply", model="gpt-5.1"))
    [info] = store.list(workspace)
    assert (info.title, info.model, info.entry_count) == ("New", "gpt-5.1", 3)
    # and the sidecar was rewritten
    assert json.loads(meta_path(store, workspace, session_id).read_text())["entryCount"] == 3
    ledger.close()


def test_growth_is_folded_in_without_rereading_the_start(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = store.create(workspace, title="T")
    for index in range(20):
        ledger.append_message(user(f"message {index}"))
    ledger.sync()
    synced_size = ledger.file.size
    ledger.append_message(user("new"))
    reads: list[tuple[int, int]] = []
    real_scan = store_module.scan_meta

    def spying_scan(path: Path, previous: object = None) -> object:
        result = real_scan(path, previous)  # type: ignore[arg-type]
        reads.append((previous.size_bytes if previous else 0, result.size_bytes))  # type: ignore[attr-defined]
        return result

    monkeypatch.setattr(store_module, "scan_meta", spying_scan)
    [info] = store.list(workspace)
    assert info.entry_count == 21
    assert reads == [(synced_size, ledger.file.size)]
    ledger.close()


def test_missing_or_corrupt_sidecars_are_rebuilt(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, title="T") as ledger:
        ledger.append_message(user("x"))
        session_id = ledger.session_id
    sidecar = meta_path(store, workspace, session_id)
    sidecar.unlink()
    [info] = store.list(workspace)
    assert (info.title, info.entry_count) == ("T", 1)
    assert sidecar.exists()
    sidecar.write_text("{not json")
    assert store.list(workspace)[0].title == "T"
    # a ledger rewritten behind the sidecar's back (same size, different content)
    ledger_path = store.ledger_path(session_id)
    data = ledger_path.read_bytes().replace(b'"title":"T"', b'"title":"U"')
    ledger_path.write_bytes(data)
    os.utime(ledger_path, ns=(1, 1))
    assert store.list(workspace)[0].title == "U"


def test_rename_appends_a_title_entry(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace) as ledger:
        session_id = ledger.session_id
    store.rename(session_id, "Renamed")
    assert store.list(workspace)[0].title == "Renamed"
    with store.open(session_id) as ledger:
        assert ledger.facts.title == "Renamed"
        assert len(ledger.tree.entries) == 1
        # while this store holds it open, rename goes through the open ledger
        store.rename(session_id, "Again")
        assert ledger.facts.title == "Again"
    assert store.list(workspace)[0].title == "Again"


def test_delete_removes_everything_and_refuses_open_sessions(
    store: SessionStore, workspace: Path
) -> None:
    ledger = store.create(workspace)
    session_id = ledger.session_id
    outputs = store.session_dir(session_id)
    assert outputs == store.workspace_dir(workspace) / session_id
    assert outputs.is_dir()
    (outputs / "tool-output-1.txt").write_text("big")
    with pytest.raises(SessionLockedError):
        store.delete(session_id)
    ledger.close()
    store.delete(session_id)
    assert store.list(workspace) == []
    assert sorted(p.name for p in store.workspace_dir(workspace).iterdir()) == ["workspace.json"]
    with pytest.raises(SessionNotFoundError):
        store.open(session_id)


@pytest.mark.parametrize("bad", ["../etc/passwd", "", "a/b", "*", "x" * 65])
def test_session_ids_are_validated(store: SessionStore, bad: str) -> None:
    with pytest.raises(SessionNotFoundError):
        store.open(bad)


def test_open_unknown_session(store: SessionStore, workspace: Path) -> None:
    store.create(workspace).close()
    with pytest.raises(SessionNotFoundError, match="no session abc"):
        store.open("abc")


def test_get_open_tracks_open_ledgers(store: SessionStore, workspace: Path) -> None:
    ledger = store.create(workspace)
    assert store.get_open(ledger.session_id) is ledger
    ledger.close()
    assert store.get_open(ledger.session_id) is None
    assert isinstance(store.open(ledger.session_id), Ledger)


def test_a_store_scoped_to_a_workspace(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    other = tmp_path / "other"
    other.mkdir()
    mine = SessionStore(root, workspace, fsync="never")
    theirs = SessionStore(root, other, fsync="never")
    with mine.create(title="mine") as ledger:  # the workspace defaults to the store's
        mine_id = ledger.session_id
    with theirs.create(title="theirs") as ledger:
        theirs_id = ledger.session_id
    assert [i.session_id for i in mine.list()] == [mine_id]
    assert [i.session_id for i in theirs.list()] == [theirs_id]
    assert mine.exists(mine_id)
    assert not mine.exists(theirs_id)
    assert not mine.exists("../x")
    with pytest.raises(SessionNotFoundError, match="workspace"):
        mine.open(theirs_id)
    with pytest.raises(SessionNotFoundError):
        mine.delete(theirs_id)
    # an unscoped store sees both
    assert {i.session_id for i in SessionStore(root).list()} == {mine_id, theirs_id}
    assert SessionStore(root).exists(theirs_id)


def test_a_fork_goes_on_from_where_the_session_is_and_leaves_it_as_it_was(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, title="Parser", model="sim-small") as ledger:
        source_id = ledger.session_id
        first = ledger.append_message(user("first"))
        ledger.append_message(assistant("one", model="sim-small"))
        ledger.rewind(first.id)  # a second branch, from the first prompt
        ledger.append_message(assistant("two", model="sim-small"))
        saved = store.session_dir(source_id) / "bash-1.txt"
        saved.write_text("the whole output\n")
        ledger.append_message(user(f"the output is saved in {saved}"))
        source_bytes = ledger.path.read_bytes()
        leaf = ledger.leaf_id
        with ledger.path.open("ab") as torn:
            torn.write(b'{"type":"message","id":"half')  # a line being written: not copied
        with store.fork(source_id) as fork:
            assert fork.session_id != source_id
            assert fork.header.workspace == ledger.header.workspace
            assert fork.header.created_at >= ledger.header.created_at
            assert fork.leaf_id == leaf
            assert [e.id for e in fork.tree.branch()] == [e.id for e in ledger.tree.branch()]
            assert len(fork.tree.entries) == len(ledger.tree.entries)
            assert fork.load_report.clean
            copied = store.session_dir(fork.session_id) / "bash-1.txt"
            assert copied.read_text() == "the whole output\n"
            assert str(copied) in fork.path.read_text() and str(saved) not in fork.path.read_text()
            fork.append_message(assistant("only in the fork", model="sim-small"))
    assert ledger.path.read_bytes().startswith(source_bytes)
    assert "only in the fork" not in ledger.path.read_text()
    assert {info.session_id for info in store.list(workspace)} == {source_id, fork.session_id}
    with pytest.raises(SessionNotFoundError):
        store.fork("nosuchsession")


def test_a_session_whose_header_cannot_be_read_is_not_forked(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace) as ledger:
        session_id = ledger.session_id
    for header in (b"5\n", b"not json\n", b""):
        ledger.path.write_bytes(header + b'{"type":"message"}\n')
        with pytest.raises(SessionError) as refused:
            store.fork(session_id)
        assert "cannot be forked" in refused.value.message
    assert list(store.workspace_dir(workspace).glob("*.jsonl")) == [ledger.path]  # no copy
