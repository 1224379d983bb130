"""Where sessions live: one directory per workspace, one ledger per session.

Layout under the root (default: the user data directory's `agent-server/sessions`, the
`sessionsDir` setting, an absolute folder, overrides it; the approvals of `.mcp.json` are
never here: agent/mcp/approval.py):

    <root>/<workspace key>/workspace.json        {"workspace": "/abs/path"}
    <root>/<workspace key>/<id>.jsonl            the ledger
    <root>/<workspace key>/<id>.meta.json        what the session list shows
    <root>/<workspace key>/<id>.index.json       where each entry is (session/index.py)
    <root>/<workspace key>/<id>/                 large tool outputs (`session_dir`)
    <root>/<workspace key>/prompt-history.txt    the terminal chat's prompts, for the up arrow

The workspace key is a readable slug of the folder name plus a short hash of the resolved
path, so two folders with the same name never share sessions.

Listing never reads whole ledgers: each session has a small meta sidecar written when its
ledger is synced. The sidecar records the ledger's size, mtime and a digest of its last bytes;
when the ledger has only grown since, the new lines are folded in; when it is missing or does
not match, it is rebuilt by a scan.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import platformdirs

from agent_server.errors import (
    ConfigError,
    LedgerFormatError,
    SessionError,
    SessionNotFoundError,
)
from agent_server.session.entries import TitleEntry, header_from_json, header_to_json
from agent_server.session.facts import facts_of_json
from agent_server.session.index import (
    DIGEST_SPAN,
    decode_line,
    digest,
    index_path_for,
    tail_digest,
)
from agent_server.session.ledger import Ledger, stamp
from agent_server.session.ledger_file import FsyncMode, encode_line
from agent_server.session.lock import SessionLock
from agent_server.session.meta import MetaFold, SessionMeta, meta_from_json, meta_to_json
from agent_server.whole_file import write_whole

log = logging.getLogger(__name__)

LEDGER_SUFFIX = ".jsonl"
META_SUFFIX = ".meta.json"
WORKSPACE_FILE = "workspace.json"
PROMPT_HISTORY_FILE = "prompt-history.txt"
CHECKPOINT_DIR = ".checkpoints"  # not a session id: those have no dots
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def default_sessions_root() -> Path:
    return Path(platformdirs.user_data_dir("agent-server")) / "sessions"


def prompt_history_path(root: Path | None, workspace: Path | str) -> Path:
    """Where `agent-server chat` keeps the prompts typed in `workspace` (line_input.py)."""
    return (root or default_sessions_root()).expanduser() / workspace_key(workspace) / (
        PROMPT_HISTORY_FILE
    )


def workspace_key(workspace: Path | str) -> str:
    """`<slug>-<hash>`: the folder's name made safe, and 10 hex of its resolved path."""
    resolved = Path(workspace).expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", resolved.name).strip("-.")[:40] or "root"
    return f"{slug}-{digest}"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    title: str | None
    model: str | None
    created_at: str
    updated_at: str
    entry_count: int
    size_bytes: int
    path: Path
    workspace: str
    first_prompt: str | None = None
    prompt_count: int = 0


class SessionStore:
    """Sessions under one root directory, one subdirectory per workspace.

    With `workspace`, the store is scoped to that workspace: `list`, `open`, `exists`,
    `rename`, `delete` and `session_dir` see only its sessions, and `create` defaults to it.
    Without, it spans every workspace under the root.
    """

    def __init__(
        self,
        root: Path | None = None,
        workspace: Path | str | None = None,
        *,
        fsync: FsyncMode = "turn",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = (root or default_sessions_root()).expanduser()
        self.clock = clock  # stamps the ledgers' entries
        self.workspace = Path(workspace).expanduser().resolve() if workspace else None
        self.fsync: FsyncMode = fsync
        self._open: dict[str, Ledger] = {}

    # --- paths ----------------------------------------------------------------------------

    def workspace_dir(self, workspace: Path | str) -> Path:
        return self.root / workspace_key(workspace)

    def ledger_path(self, session_id: str) -> Path:
        """The ledger of an existing session (SessionNotFoundError otherwise)."""
        _check_session_id(session_id)
        name = f"{session_id}{LEDGER_SUFFIX}"
        if self.workspace is not None:
            candidates = [self.workspace_dir(self.workspace) / name]
            where = f"workspace {self.workspace}"
        else:
            candidates = sorted(self.root.glob(f"*/{name}"))
            where = str(self.root)
        for candidate in candidates:
            if candidate.is_file():
                return candidate
        raise SessionNotFoundError(
            f"no session {session_id} in {where}; list the sessions to see which exist"
        )

    def exists(self, session_id: str) -> bool:
        try:
            self.ledger_path(session_id)
        except SessionNotFoundError:
            return False
        return True

    def checkpoint_dir(self, workspace: Path | str | None = None) -> Path:
        """Where the contents of files the agent changed are kept (agent/checkpoints.py),
        shared by the workspace's sessions, beside their ledgers; nothing there is deleted."""
        workspace = workspace if workspace is not None else self.workspace
        if workspace is None:
            raise SessionError("checkpoints belong to a workspace folder")
        return self.workspace_dir(workspace) / CHECKPOINT_DIR

    def session_dir(self, session_id: str) -> Path:
        """A directory beside the ledger for the session's large tool outputs (created)."""
        path = self.ledger_path(session_id).with_suffix("")
        path.mkdir(exist_ok=True)
        return path

    # --- sessions -------------------------------------------------------------------------

    def create(
        self,
        workspace: Path | str | None = None,
        *,
        title: str | None = None,
        model: str | None = None,
        session_id: str | None = None,
    ) -> Ledger:
        """A new session for `workspace` (default: the store's), open and locked. `model` is
        recorded in the header (the session list shows it until a model change says else)."""
        workspace = workspace if workspace is not None else self.workspace
        if workspace is None:
            raise SessionError("a new session needs a workspace folder")
        directory = self.workspace_dir(workspace)
        resolved = str(Path(workspace).expanduser().resolve())
        marker = directory / WORKSPACE_FILE
        try:
            directory.mkdir(parents=True, exist_ok=True)
            if not marker.exists():
                _write_json_atomic(marker, {"workspace": resolved})
        except OSError as exc:
            raise ConfigError(
                f"cannot keep sessions in {directory}: {exc.strerror or exc}; set sessionsDir "
                "to a folder this user can write"
            ) from exc
        if session_id is not None:
            _check_session_id(session_id)
        sid = session_id or new_session_id()
        ledger = Ledger.create(
            directory / f"{sid}{LEDGER_SUFFIX}",
            session_id=sid,
            workspace=resolved,
            title=title,
            model=model,
            fsync=self.fsync,
            on_sync=self._write_meta,
            on_close=self._forget,
            clock=self.clock,
        )
        self._open[sid] = ledger
        return ledger

    def fork(self, session_id: str) -> Ledger:
        """A new session that goes on from where `session_id` is: a copy of its ledger (every
        branch, the same leaf) and of its folder (saved outputs, the permission answers), open
        and locked, under a new id and its own creation time; `session_id` is left as it is.
        The saved outputs' paths in the copied results name the new folder. Only whole lines
        are copied (a turn being written in the source ends where its last line does)."""
        source = self.ledger_path(session_id)
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise SessionError(f"cannot read the session file {source}: {exc.strerror}") from exc
        first, _, body = data[: data.rfind(b"\n") + 1].partition(b"\n")
        try:
            header = header_from_json(json.loads(first))
        except (ValueError, AttributeError, SessionError) as exc:
            raise SessionError(f"the session file {source} has no readable header: it cannot "
                               "be forked (it can still be opened)") from exc
        sid = new_session_id()
        path = source.with_name(f"{sid}{LEDGER_SUFFIX}")
        old_dir, new_dir = source.with_suffix(""), path.with_suffix("")
        if old_dir.is_dir():
            shutil.copytree(old_dir, new_dir, symlinks=True)
            # The paths of saved outputs, as the results wrote them (JSON strings).
            body = body.replace(_in_json(old_dir), _in_json(new_dir))
        copy = replace(header, session_id=sid, created_at=stamp(self.clock))
        try:  # whole or not at all: a fork cut short is no session
            write_whole(path, encode_line(header_to_json(copy)) + body, mode=0o644)
        except OSError as exc:
            path.unlink(missing_ok=True)
            raise SessionError(f"cannot write the session file {path}: {exc.strerror}") from exc
        return self.open(sid)

    def open(self, session_id: str) -> Ledger:
        """Open and lock an existing session (SessionLockedError if it is open elsewhere)."""
        path = self.ledger_path(session_id)
        ledger = Ledger.open(
            path,
            fsync=self.fsync,
            session_id=session_id,
            on_sync=self._write_meta,
            on_close=self._forget,
            clock=self.clock,
        )
        if not ledger.load_report.clean:
            for issue in ledger.load_report.issues:
                log.warning(
                    "session %s, line %d: %s (%s)",
                    session_id,
                    issue.line_number,
                    issue.reason,
                    issue.action,
                )
        self._open[session_id] = ledger
        return ledger

    def get_open(self, session_id: str) -> Ledger | None:
        """The ledger this store opened for `session_id`, if it is still open."""
        return self._open.get(session_id)

    def list(self, workspace: Path | str | None = None) -> list[SessionInfo]:
        """The sessions of `workspace` (default: the store's, else every workspace), newest
        first."""
        if not self.root.is_dir():
            return []
        workspace = workspace if workspace is not None else self.workspace
        if workspace is not None:
            directories = [self.workspace_dir(workspace)]
        else:
            directories = [d for d in self.root.iterdir() if d.is_dir()]
        infos: list[SessionInfo] = []
        for directory in directories:
            if not directory.is_dir():
                continue
            for path in directory.glob(f"*{LEDGER_SUFFIX}"):
                info = self._info(path)
                if info is not None:
                    infos.append(info)
        infos.sort(key=lambda i: (i.updated_at, i.created_at, i.session_id), reverse=True)
        return infos

    def resolve(self, id_or_prefix: str) -> str:
        """The session whose id is `id_or_prefix`, or the only one that starts with it
        (SessionNotFoundError when none does, or several do: it names them)."""
        if self.exists(id_or_prefix):
            return id_or_prefix
        matches = [i.session_id for i in self.list() if i.session_id.startswith(id_or_prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionNotFoundError(
                f"no session {id_or_prefix!r} here; `agent-server sessions list` shows them"
            )
        raise SessionNotFoundError(
            f"{id_or_prefix!r} could be any of {', '.join(sorted(matches))}; give more of the id"
        )

    def info(self, session_id: str) -> SessionInfo:
        info = self._info(self.ledger_path(session_id))
        if info is None:
            raise SessionError(f"session {session_id} cannot be read; see the server log")
        return info

    def rename(self, session_id: str, title: str) -> None:
        """Append a title entry (through the open ledger when this store has it open)."""
        ledger = self._open.get(session_id)
        if ledger is not None:
            ledger.add(TitleEntry, title)
            ledger.sync()
            return
        with self.open(session_id) as opened:
            opened.add(TitleEntry, title)

    def delete(self, session_id: str) -> None:
        """Remove a session's ledger, sidecars and outputs; refused while it is open."""
        path = self.ledger_path(session_id)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError as exc:
            raise SessionNotFoundError(f"no session {session_id}") from exc
        try:
            lock = SessionLock.acquire(fd, path, session_id)
            try:
                path.unlink()
                path.with_name(f"{session_id}{META_SUFFIX}").unlink(missing_ok=True)
                index_path_for(path).unlink(missing_ok=True)
                outputs = path.with_suffix("")
                if outputs.is_dir():
                    shutil.rmtree(outputs, ignore_errors=True)
                # The lock file older versions kept beside the ledger.
                path.with_name(path.name + ".lock").unlink(missing_ok=True)
            finally:
                lock.release()
        finally:
            os.close(fd)

    # --- meta sidecars --------------------------------------------------------------------

    def _forget(self, ledger: Ledger) -> None:
        if self._open.get(ledger.session_id) is ledger:
            del self._open[ledger.session_id]

    def _write_meta(self, ledger: Ledger) -> None:
        try:
            fold = ledger.facts.meta
            meta = SessionMeta(
                session_id=ledger.session_id,
                workspace=ledger.header.workspace,
                created_at=ledger.header.created_at,
                updated_at=fold.updated_at,
                title=fold.title,
                model=fold.model,
                entry_count=fold.entry_count,
                size_bytes=ledger.file.size,
                mtime_ns=ledger.file.mtime_ns(),
                tail_digest=_tail_digest(ledger.path, ledger.file.size),
                first_prompt=fold.first_prompt,
                prompt_count=fold.prompt_count,
            )
            _write_json_atomic(_meta_path(ledger.path), meta_to_json(meta))
        except OSError as exc:
            log.warning("cannot write the session list entry of %s: %s", ledger.session_id, exc)

    def _info(self, path: Path) -> SessionInfo | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        meta = _read_meta(_meta_path(path))
        if meta is None or not _meta_matches(meta, path, stat.st_size, stat.st_mtime_ns):
            try:
                meta = scan_meta(path, meta)
            except (OSError, SessionError, LedgerFormatError) as exc:
                log.warning("skipping session file %s: %s", path, exc)
                return None
            try:
                _write_json_atomic(_meta_path(path), meta_to_json(meta))
            except OSError as exc:
                log.warning("cannot write the session list entry %s: %s", path, exc)
        return SessionInfo(
            session_id=meta.session_id,
            title=meta.title,
            model=meta.model,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            entry_count=meta.entry_count,
            size_bytes=stat.st_size,
            path=path,
            workspace=meta.workspace,
            first_prompt=meta.first_prompt,
            prompt_count=meta.prompt_count,
        )


def _in_json(path: Path) -> bytes:
    """`path` as a ledger line writes it inside a string (ledger.encode_line)."""
    return json.dumps(str(path), ensure_ascii=False)[1:-1].encode("utf-8")


def new_session_id() -> str:
    return os.urandom(8).hex()


def scan_meta(path: Path, previous: SessionMeta | None = None) -> SessionMeta:
    """The meta of the ledger at `path`, folding in only the lines after `previous` when the
    ledger has only grown since `previous` was written; a full scan otherwise. One pass,
    a line at a time: memory does not grow with the file."""
    with path.open("rb") as handle:
        stat = os.fstat(handle.fileno())
        if previous is not None and _grew_from(previous, handle, stat.st_size):
            start = previous.size_bytes
            handle.seek(start)
            session_id, workspace, created_at = (
                previous.session_id,
                previous.workspace,
                previous.created_at,
            )
            fold = MetaFold(
                previous.title,
                previous.model,
                previous.updated_at,
                previous.entry_count,
                previous.first_prompt,
                previous.prompt_count,
            )
        else:
            handle.seek(0)
            first = handle.readline()
            if not first.endswith(b"\n"):
                raise LedgerFormatError(f"{path} has no complete session header")
            try:
                header = header_from_json(json.loads(first))
            except ValueError as exc:
                raise LedgerFormatError(f"{path}: the session header is not valid JSON") from exc
            session_id, workspace, created_at = (
                header.session_id,
                header.workspace,
                header.created_at,
            )
            fold = MetaFold.start(header)
            start = len(first)
        size = start
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # complete lines only; a line being written waits
            size += len(raw)
            if not raw.strip():
                continue
            try:
                fold.add(facts_of_json(decode_line(raw)))
            except (ValueError, LedgerFormatError, RecursionError):
                continue
    return SessionMeta(
        session_id=session_id,
        workspace=workspace,
        created_at=created_at,
        updated_at=fold.updated_at,
        title=fold.title,
        model=fold.model,
        entry_count=fold.entry_count,
        size_bytes=size,
        mtime_ns=stat.st_mtime_ns,
        tail_digest=_tail_digest(path, size),
        first_prompt=fold.first_prompt,
        prompt_count=fold.prompt_count,
    )


def _meta_path(ledger_path: Path) -> Path:
    return ledger_path.with_name(ledger_path.name[: -len(LEDGER_SUFFIX)] + META_SUFFIX)


def _read_meta(path: Path) -> SessionMeta | None:
    try:
        return meta_from_json(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        return None


def _meta_matches(meta: SessionMeta, path: Path, size: int, mtime_ns: int) -> bool:
    return (
        meta.size_bytes == size
        and meta.mtime_ns == mtime_ns
        and meta.session_id == (path.name[: -len(LEDGER_SUFFIX)])
    )


def _grew_from(previous: SessionMeta, handle: BinaryIO, size: int) -> bool:
    """Whether the file still starts with what `previous` described (it only grew)."""
    if previous.size_bytes <= 0 or previous.size_bytes > size:
        return False
    begin = max(0, previous.size_bytes - DIGEST_SPAN)
    handle.seek(begin)
    tail = handle.read(previous.size_bytes - begin)
    return tail.endswith(b"\n") and digest(tail) == previous.tail_digest


def _tail_digest(path: Path, size: int) -> str:
    with path.open("rb") as handle:
        return tail_digest(handle.fileno(), size)


def _write_json_atomic(path: Path, data: object) -> None:
    write_whole(path, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode())


def _check_session_id(session_id: str) -> None:
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise SessionNotFoundError(
            f"{session_id!r} is not a session id (letters, digits, '-' and '_' only)"
        )
