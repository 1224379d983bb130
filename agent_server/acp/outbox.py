"""The ordered outbox of session updates: the agent's events arrive synchronously, the SDK
sends asynchronously, one update at a time, in the order the agent made them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp.interfaces import Client

from agent_server.acp.updates import SessionUpdate

log = logging.getLogger(__name__)

RawSender = Callable[[str, dict[str, Any]], Awaitable[None]]


class UpdateQueue:
    """Session updates in the order the agent made them, sent one at a time.

    Agent events arrive synchronously; the SDK sends asynchronously. A request handler that
    must have its updates out before it answers (a prompt, a load) drains the outbox first.
    """

    def __init__(self, client: Client, raw: RawSender | None = None) -> None:
        self._client = client
        self._raw = raw
        self._queue: asyncio.Queue[tuple[str, SessionUpdate]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def put(self, session_id: str, update: SessionUpdate) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send_all())
        self._queue.put_nowait((session_id, update))

    async def drain(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _send_all(self) -> None:
        while True:
            session_id, update = await self._queue.get()
            try:
                if isinstance(update, dict):  # one the SDK has no model for (RawUpdate)
                    if self._raw is not None:
                        await self._raw(session_id, update)
                else:
                    await self._client.session_update(session_id=session_id, update=update)
            except Exception as error:  # a gone client must not stop the agent's work
                log.warning("session/update %s not sent: %s", update_kind(update), error)
            finally:
                self._queue.task_done()


def update_kind(update: SessionUpdate) -> str:
    return str(update.get("sessionUpdate")) if isinstance(update, dict) else update.session_update
