"""Checkpoints: the files the agent wrote or edited, put back as they were at an earlier point.

Before a write or an edit runs, the file's bytes are stored in the workspace's checkpoint
folder beside the ledgers (`SessionStore.checkpoint_dir`), named by their SHA-256: the same
content is stored once, and nothing there is ever deleted. After the call, the new bytes are
stored too, and the tool result records `{path, before, after}` (`before` None: the file did
not exist) in its details, which the ledger keeps.

A restore to an entry of the session puts every file the agent changed *after that entry was
written* (in the ledger's order, whichever branch the change was on: the file system has one
history) back to its content before the first of those changes, or deletes it if it did not
exist then. The restore itself is recorded (a `fileRestore` entry, with each file's content
before and after), so that a later rewind to a point before it puts back what it replaced.

What is not restorable is said, not guessed: the commands bash ran after the point (what they
changed is not tracked), and the workspace files modified since then that no checkpoint
covers. A file the agent changed that was changed again since (by a command or by hand) is
flagged: restoring it discards that change.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_server.agent.tools.paths import (
    display_path,
    open_regular,
    remove_file,
    replace_regular,
    resolve_in_workspace,
)
from agent_server.agent.tools.walk import walk_files
from agent_server.errors import AgentServerError, ToolError
from agent_server.llm.messages import AssistantMessage, ToolResultMessage
from agent_server.session import facts as kinds
from agent_server.session.entries import (
    Entry,
    FileRestoreEntry,
    FileVersion,
    MessageEntry,
    UnknownEntry,
)
from agent_server.session.ledger import Ledger
from agent_server.whole_file import write_whole

DETAILS_KEY = "checkpoint"  # in a write's or edit's result details
MAX_SCANNED = 20_000  # workspace entries looked at for files changed outside the checkpoints
MAX_LISTED = 200  # untracked files named in a plan (the rest counted)
NOTE_KIND = "filesRestored"


class CheckpointError(AgentServerError):
    code = "checkpoint_error"


class BlobStore:
    """Contents by SHA-256, written once (atomically) and never deleted."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_whole(target, data, mode=0o600)
        return digest

    def size(self, digest: str) -> int:
        """The stored content's size in bytes (CheckpointError when it is missing)."""
        try:
            return self.path(digest).stat().st_size
        except OSError as error:
            raise CheckpointError(
                f"the saved content {digest[:12]} is missing from {self.root} "
                f"({error.strerror}); that file cannot be shown"
            ) from error

    def get(self, digest: str) -> bytes:
        try:
            return self.path(digest).read_bytes()
        except OSError as error:
            raise CheckpointError(
                f"the saved content {digest[:12]} is missing from {self.root} "
                f"({error.strerror}); that file cannot be restored"
            ) from error


@dataclass(frozen=True, slots=True)
class Captured:
    """A file just before a write or edit: its workspace path and stored content."""

    path: str
    absolute: Path
    before: str | None


def capture(workspace: Path, blobs: BlobStore, written: str) -> Captured | None:
    """Store the current content of the file a write or edit is about to change (None when
    the path is refused or not a regular file: the tool refuses it too)."""
    try:
        path = resolve_in_workspace(workspace, written)
        if path.exists() and not path.is_file():
            return None
        shown = display_path(workspace, path)
        current = _current(path, shown)
    except ToolError:
        return None
    before = blobs.put(current[0]) if current is not None else None
    return Captured(shown, path, before)


def version_after(captured: Captured, blobs: BlobStore) -> FileVersion:
    """The change a successful write or edit made to the file `captured` before it."""
    try:
        current = _current(captured.absolute, captured.path)
    except ToolError:  # swapped for a link meanwhile: not the file written
        current = None
    after = blobs.put(current[0]) if current is not None else None
    return FileVersion(captured.path, captured.before, after)


def version_of(details: Mapping[str, Any] | None) -> FileVersion | None:
    """The file change a tool result's details record, if any."""
    raw = (details or {}).get(DETAILS_KEY)
    if raw is None:
        return None
    try:
        return FileVersion.from_json(raw)
    except AgentServerError:
        return None


# --- planning a restore ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """A file a restore would change: to `target` (None: delete it); `changed_since`: its
    content now is not what the agent's last change left (edited since, by hand or by a
    command), and restoring discards that."""

    path: str
    target: str | None
    current: str | None
    changed_since: bool

    @property
    def action(self) -> str:
        return "delete" if self.target is None else "restore"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "action": self.action, "changedSince": self.changed_since}


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What restoring the files to how they were at entry `entry_id` would do."""

    entry_id: str
    files: tuple[PlannedFile, ...]
    commands: tuple[str, ...]  # bash commands run since: their changes are not tracked
    untracked: tuple[str, ...]  # files modified since that no checkpoint covers
    untracked_more: int = 0  # more of those, not named

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [planned.to_json() for planned in self.files],
            "notRestorable": {
                "commands": list(self.commands),
                "files": list(self.untracked),
                "moreFiles": self.untracked_more,
            },
        }


def plan_restore(
    ledger: Ledger,
    entry_id: str,
    workspace: Path,
    *,
    ignore: Iterable[Path] = (),
) -> RestorePlan:
    """The files to put back for a restore to `entry_id` (see the module docstring)."""
    point = ledger.tree.get(entry_id)
    if point is None:
        raise CheckpointError(f"no entry {entry_id} in session {ledger.session_id}")
    first: dict[str, FileVersion] = {}
    last: dict[str, FileVersion] = {}
    commands: list[str] = []
    asked: dict[str, str] = {}  # bash calls since, by id, until their result says they ran
    since = ledger.tree.appended_after(
        entry_id, kinds.TOOL_RESULT + kinds.ASSISTANT + kinds.FILE_RESTORE + kinds.UNKNOWN
    )
    for entry in since:
        for version in _versions(entry):
            first.setdefault(version.path, version)
            last[version.path] = version
        commands.extend(_commands(entry, asked))
    files: list[PlannedFile] = []
    for path, version in first.items():
        try:
            found = _current(resolve_in_workspace(workspace, path), path)
        except ToolError:
            continue
        current = _digest(found[0] if found is not None else None)
        if current == version.before:
            continue
        files.append(PlannedFile(path, version.before, current, current != last[path].after))
    untracked, more = _modified_since(workspace, _seconds(point.timestamp), set(first), ignore)
    return RestorePlan(entry_id, tuple(files), tuple(commands), untracked, more)


def restore(
    plan: RestorePlan, workspace: Path, blobs: BlobStore
) -> tuple[tuple[FileVersion, ...], tuple[str, ...]]:
    """Carry out `plan`: the change made to each file (for the ledger's record), and the
    files that could not be restored, with why."""
    done: list[FileVersion] = []
    problems: list[str] = []
    for planned in plan.files:
        try:
            path = resolve_in_workspace(workspace, planned.path)
            data = None if planned.target is None else blobs.get(planned.target)
            now = _current(path, planned.path)
            before = blobs.put(now[0]) if now is not None else None
            if data is None:
                if now is not None:
                    remove_file(path, planned.path)
            else:
                mode = now[1] if now is not None else 0o644
                replace_regular(path, planned.path, data, mode=mode)
        except (AgentServerError, OSError) as error:
            why = error.message if isinstance(error, AgentServerError) else str(error)
            problems.append(f"{planned.path}: {why}")
            continue
        done.append(FileVersion(planned.path, before, planned.target))
    return tuple(done), tuple(problems)


def restored_note(versions: Iterable[FileVersion]) -> str:
    """The note that tells the model its files were put back (the conversation goes on)."""
    parts = [
        f"{v.path} (deleted: it did not exist then)" if v.after is None else v.path
        for v in versions
    ]
    return (
        "The user restored these files to their content from an earlier point of this "
        f"conversation, undoing later changes: {', '.join(parts)}. Read them again before "
        "relying on what you saw of them."
    )


def _versions(entry: Entry) -> list[FileVersion]:
    if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
        if entry.message.is_error:
            return []
        version = version_of(entry.message.details)
        return [version] if version is not None else []
    if isinstance(entry, FileRestoreEntry):
        return list(entry.files)
    return []


def _commands(entry: Entry, asked: dict[str, str]) -> list[str]:
    """The bash commands `entry` shows ran: a bash call is noted in `asked`, and counted
    when its result comes, unless the permission was denied (it never ran)."""
    if isinstance(entry, UnknownEntry) or not isinstance(entry, MessageEntry):
        return []
    message = entry.message
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            if call.name == "bash" and isinstance(command := call.arguments.get("command"), str):
                asked[call.id] = command
        return []
    if isinstance(message, ToolResultMessage) and message.tool_call_id in asked:
        command = asked.pop(message.tool_call_id)
        denied = (message.details or {}).get("permission") == "denied"
        return [] if denied else [command]
    return []


def _modified_since(
    workspace: Path, moment: float, tracked: set[str], ignore: Iterable[Path]
) -> tuple[tuple[str, ...], int]:
    """Workspace files modified after `moment` (seconds) that are not in `tracked`."""
    root = workspace.resolve()
    skipped = [path.resolve() for path in ignore]
    found: list[str] = []
    more = 0
    threshold = int(moment * 1e9)
    for number, path in enumerate(walk_files(root)):
        if number >= MAX_SCANNED:
            break
        if any(path.is_relative_to(skip) for skip in skipped):
            continue
        try:
            if path.lstat().st_mtime_ns <= threshold:
                continue
        except OSError:
            continue
        relative = path.relative_to(root).as_posix()
        if relative in tracked:
            continue
        if len(found) < MAX_LISTED:
            found.append(relative)
        else:
            more += 1
    return tuple(found), more


def _current(path: Path, shown: str) -> tuple[bytes, int] | None:
    """The content and permission bits of the regular file `path` (checked), opened without
    following a link (ToolError if one appeared); None when there is no file there (or a
    directory). Hard links are read: a checkpoint stores, it shows nothing."""
    try:
        with open_regular(path, shown, hard_links_allowed=True) as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            return file.read(), stat.S_IMODE(info.st_mode)
    except (FileNotFoundError, IsADirectoryError):
        return None


def _digest(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _seconds(timestamp: str) -> float:
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0


