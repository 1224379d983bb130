"""One writer per session: an exclusive, non-blocking lock on a sidecar `.lock` file.

The lock is an OS file lock (flock on POSIX, msvcrt on Windows) held on an open descriptor,
so it goes away when the holder closes it or dies; no stale lock survives a crash. The holder
writes its pid into the file so that the refusal can say who holds it. The lock file itself
is never removed while a session exists (removing it would let two processes lock two
different inodes).

flock locks belong to an open file description, so a second `SessionLock` on the same file
in the same process is refused too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agent_server.errors import SessionError, SessionLockedError

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class SessionLock:
    """An acquired lock; `release()` (or process death) gives it up."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self._fd: int | None = None

    @classmethod
    def acquire(cls, path: Path, session_id: str) -> SessionLock:
        """Lock `path` or raise SessionLockedError naming the holder's pid."""
        lock = cls(path, session_id)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SessionError(f"cannot create the lock file {path}: {exc.strerror}") from exc
        if not _try_lock(fd):
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "another process"
            if holder == os.getpid():
                who = f"pid {holder}, this process"
            raise SessionLockedError(
                f"session {session_id} is open elsewhere ({who}); close it there first"
            )
        # Record our pid for whoever is refused next.
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except OSError:
            pass  # the pid is only a courtesy for the refusal message
        lock._fd = fd
        return lock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 32)
        return int(raw.decode("ascii").strip() or "0") or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
