"""Going back to an earlier point of a session; nothing is deleted.

What goes back is the user's choice: the conversation (the ledger's leaf moves, optionally
with a summary of the branch left behind), the files the agent wrote or edited since that
point (agent/checkpoints.py), or both. The session says when (between turns).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_server.agent.checkpoints import NOTE_KIND as RESTORE_NOTE
from agent_server.agent.checkpoints import BlobStore, RestorePlan, plan_restore, restored_note
from agent_server.agent.checkpoints import restore as restore_files
from agent_server.agent.context_manager import ContextManager
from agent_server.agent.events import EventSink, Notice
from agent_server.agent.file_watch import FileWatch, files_seen
from agent_server.context.projection import is_prompt
from agent_server.context.summary_prompt import note_message
from agent_server.errors import ConfigError, EntryNotFoundError, ProviderError
from agent_server.llm.messages import ToolCall, UserContent, UserMessage
from agent_server.protocol import RestoreChoice as RestoreChoice
from agent_server.session.entries import Entry, FileRestoreEntry, FileVersion, MessageEntry
from agent_server.session.ledger import Ledger


@dataclass(frozen=True, slots=True)
class Rewound:
    """Where a rewind left the session: `leaf_id`, the entry the next prompt follows;
    `prompt`, the content of the prompt rewound from (to ask again, edited), if it was one
    and the conversation went back; `summary`, the summary of the branch left behind, if one
    was asked for and made; `files`, the files put back (`after` None: deleted) and
    `problems`, those that could not be."""

    leaf_id: str | None
    prompt: tuple[UserContent, ...] | None = None
    summary: str | None = None
    files: tuple[FileVersion, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FileThen:
    """A file as it was at an entry: `size` None when it did not exist then; `data` its
    content, when not over the size asked for."""

    path: str
    size: int | None
    data: bytes | None


@dataclass
class Rewinder:
    """One session's rewinds: its ledger, workspace and checkpoints, and the file watch that
    takes restored files as the agent's own."""

    ledger: Ledger
    workspace: Path
    checkpoints: BlobStore | None
    private_dirs: tuple[Path, ...]  # never listed as changed files (the sessions)
    watch: FileWatch
    paths_of: Callable[[ToolCall], tuple[str, ...]]
    context: ContextManager  # the summary of a branch left behind
    emit: EventSink

    def plan(self, entry_id: str) -> RestorePlan:
        """What restoring the files to how they were at `entry_id` would change."""
        if entry_id not in self.ledger.tree:
            raise EntryNotFoundError(f"no entry {entry_id} in session {self.ledger.session_id}")
        return plan_restore(self.ledger, entry_id, self.workspace, ignore=self.private_dirs)

    def files_then(self, entry_id: str, max_bytes: int) -> list[FileThen]:
        """The files a restore to `entry_id` would put back, each as it was then: what the
        agent changed since, to compare with now. A content over `max_bytes` is not read."""
        if self.checkpoints is None:
            raise ConfigError("this session keeps no checkpoints of its files")
        out = []
        for planned in self.plan(entry_id).files:
            if planned.target is None:
                out.append(FileThen(planned.path, None, None))
                continue
            size = self.checkpoints.size(planned.target)
            data = self.checkpoints.get(planned.target) if size <= max_bytes else None
            out.append(FileThen(planned.path, size, data))
        return out

    async def rewind(self, entry_id: str, summarize: bool, restore: RestoreChoice) -> Rewound:
        """Rewinding to a prompt goes to just before it, so that the next prompt replaces it
        (the model sees the history up to there and the new prompt only); rewinding to any
        other entry continues after it. With `summarize`, a short summary of the branch left
        behind is made (one model call) and shown to the model as a note where the rewind
        happened. The files: each goes back to its content when `entry_id` was written; when
        the conversation stays, the model is told which files were put back."""
        if entry_id not in self.ledger.tree:
            raise EntryNotFoundError(
                f"cannot rewind to {entry_id}: no such entry in session {self.ledger.session_id}"
            )
        files: tuple[FileVersion, ...] = ()
        problems: tuple[str, ...] = ()
        if restore != "conversation":
            files, problems = await self._restore_files(entry_id, restore)
        prompt: tuple[UserContent, ...] | None = None
        summary: str | None = None
        if restore != "files":
            target: str | None = entry_id
            entry = self.ledger.tree.get(entry_id)
            if (
                isinstance(entry, MessageEntry)
                and isinstance(entry.message, UserMessage)
                and is_prompt(entry.message)
            ):
                target, prompt = entry.parent_id, entry.message.typed
            summary = await self._branch_summary(target) if summarize else None
            self.ledger.rewind(target, summary=summary)
        self._record_restore(entry_id, files, note=restore == "files")
        return Rewound(self.ledger.leaf_id, prompt, summary, files, problems)

    async def _restore_files(
        self, entry_id: str, restore: RestoreChoice
    ) -> tuple[tuple[FileVersion, ...], tuple[str, ...]]:
        """The files put back for a rewind to `entry_id`. A restore under way cannot be
        stopped halfway (it runs in a thread): when the rewind is cancelled meanwhile, what it
        changed is still recorded once it ends (a later rewind must know), then the cancel
        goes on."""
        if self.checkpoints is None:
            raise ConfigError("this session keeps no checkpoints of its files")
        plan = self.plan(entry_id)
        work = asyncio.ensure_future(
            asyncio.to_thread(restore_files, plan, self.workspace, self.checkpoints)
        )
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            files, _ = await work
            self._record_restore(entry_id, files, note=restore == "files")
            raise

    def _record_restore(
        self, entry_id: str, files: tuple[FileVersion, ...], *, note: bool
    ) -> None:
        """The ledger's record of the files a rewind put back (and, with `note`, the model's
        note of them); the file watch takes them as the agent's own."""
        if files:
            self.ledger.add(FileRestoreEntry, entry_id, files)
            if note:
                self.ledger.append_message(note_message(RESTORE_NOTE, restored_note(files)))
        self.ledger.sync()
        self.watch.restore(files_seen(self.ledger.tree.projection_entries(), self.paths_of))
        # Restored files hold what the model is told (or saw at that point): not an
        # external edit.
        self.watch.accept(version.path for version in files)

    async def _branch_summary(self, target: str | None) -> str | None:
        """A summary of the entries the rewind to `target` leaves (from the leaf back to
        where the two paths meet); None when there is nothing to summarise or it failed."""
        kept = set() if target is None else set(self.ledger.tree.branch_ids(target))
        left_ids: list[str] = []
        for entry_id in reversed(self.ledger.tree.branch_ids()):  # the index: nothing is read
            if entry_id in kept:
                break
            left_ids.append(entry_id)
        left: list[Entry] = self.ledger.tree.read(reversed(left_ids))
        try:
            return await self.context.summarise_branch(left) or None
        except ProviderError as error:
            self.emit(
                Notice(None, "warning", f"Rewound without a summary of the branch: {error.message}")
            )
            return None
