"""Which sessions the server keeps open: at most MAX_OPEN_SESSIONS, the least recently used
idle ones closed beyond that.

A session is opened by the first request naming it and stays open for the server's life
unless closed: its ledger held open and locked, ~170 KB of memory, its MCP servers running.
An editor window lives for days and its user browses sessions in it (each `session/load`
opens one), so without a bound the open files alone would reach macOS's default limit of
256 near 250 sessions. A closed session reopens on the next request naming it, its
transcript and settings read back from its ledger (WorkspaceAgent.evict).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Collection, Iterator
from contextlib import contextmanager

# Enough for the sessions a user works in at once (several editor tabs, each with a turn
# running or a question waiting: those are never closed), few enough to stay far below any
# open-files limit (macOS's default is 256) and to keep memory and MCP servers small.
MAX_OPEN_SESSIONS = 16


class SessionUse:
    """When each session was last named by a request, and the requests under way."""

    def __init__(self) -> None:
        self._last: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._requests: Counter[str] = Counter()  # requests under way, by session id

    @contextmanager
    def request(self, session_id: str) -> Iterator[None]:
        """A request naming `session_id` is under way: the session is not closed meanwhile
        (a turn, a compaction, a rewind, a question to the user, a model switch)."""
        self._requests[session_id] += 1
        try:
            yield
        finally:
            self._requests[session_id] -= 1
            if self._requests[session_id] <= 0:
                del self._requests[session_id]

    def touch(self, session_id: str) -> None:
        """A request named the session (it was opened or found open)."""
        self._last[session_id] = None
        self._last.move_to_end(session_id)

    def closable(self, open_ids: Collection[str]) -> list[str]:
        """The open sessions no request is using, least recently used first; sessions no
        longer open are forgotten."""
        for session_id in [s for s in self._last if s not in open_ids]:
            del self._last[session_id]
        unnamed = [s for s in open_ids if s not in self._last]
        return [s for s in (*unnamed, *self._last) if s not in self._requests]
