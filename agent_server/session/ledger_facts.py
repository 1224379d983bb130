"""What the index of an open ledger folds from all its entries, whatever the branch.

The index keeps these up to date on every append (index.py): the session list's meta, the
usage of every model call, and where the latest model change, system prompt, tool list and
cached call are. `LedgerFacts` reads them, and the one line each position points to.
"""

from __future__ import annotations

import dataclasses

from agent_server.llm.messages import Usage
from agent_server.session.entries import (
    MessageEntry,
    ModelChangeEntry,
    SystemPromptEntry,
    ToolListEntry,
)
from agent_server.session.index import LedgerIndex
from agent_server.session.meta import MetaFold
from agent_server.session.tree import EntryTree


class LedgerFacts:
    """The facts of one open ledger (`Ledger.facts`): its title, the model and thinking level
    in force, the system prompt and tool list recorded, the last call, usage and meta."""

    def __init__(self, index: LedgerIndex, tree: EntryTree) -> None:
        self._index = index
        self._tree = tree

    @property
    def title(self) -> str | None:
        """The latest title entry's title, else the header's."""
        return self._index.meta.title

    @property
    def model_change(self) -> ModelChangeEntry | None:
        """The latest model change entry in the file, if any."""
        entry = self._tree.at(self._index.model_change)
        assert entry is None or isinstance(entry, ModelChangeEntry)
        return entry

    @property
    def last_call(self) -> MessageEntry | None:
        """The latest model answer in the file that recorded its cache retention (when and how
        the session's cache was last used), if any: one line read, through the index."""
        entry = self._tree.at(self._index.last_call)
        assert entry is None or isinstance(entry, MessageEntry)
        return entry

    def latest_model(self) -> str | None:
        """The model of the latest model change entry, else the header's."""
        change = self.model_change
        return change.model if change is not None else self._index.header.model

    def latest_thinking(self) -> str | None:
        """The thinking level of the latest model change entry (None: not recorded)."""
        change = self.model_change
        return change.thinking if change is not None else None

    def system_prompt(self) -> str | None:
        """The latest recorded system prompt (a SystemPromptEntry), if any."""
        entry = self._tree.at(self._index.system_prompt)
        assert entry is None or isinstance(entry, SystemPromptEntry)
        return entry.text if entry is not None else None

    def tool_list(self) -> ToolListEntry | None:
        """The latest recorded tool list (a ToolListEntry), if any."""
        entry = self._tree.at(self._index.tool_list)
        assert entry is None or isinstance(entry, ToolListEntry)
        return entry

    @property
    def meta(self) -> MetaFold:
        """Title, model, last update and entry count (kept up to date on every append)."""
        return dataclasses.replace(self._index.meta, entry_count=len(self._index))

    @property
    def usage(self) -> tuple[Usage, int]:
        """The usage of every model call the file records (all branches, compactions'
        summaries included), summed, and the number of calls."""
        return self._index.usage, self._index.calls
