"""One writer per session: an exclusive, non-blocking OS lock on the ledger file itself.

The lock is taken on the ledger's own open descriptor (flock on POSIX, msvcrt on Windows),
so it goes away when the holder closes the file or dies, and no other file is involved:
deleting any file cannot let a second process open a session another holds. (Deleting the
ledger itself deletes the session: there is then nothing left to open.) An earlier version
locked a `<id>.jsonl.lock` sidecar, which deleting let a second server take.

flock locks belong to an open file description, so a second `Ledger` on the same file in
the same process is refused too. The refusal names the holder's pid when the OS says
(Linux's /proc/locks), or says it is this process.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from agent_server.errors import SessionLockedError

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    # A byte far past any ledger's end: Windows locks are mandatory, and locking real bytes
    # would stop readers (the session list) from reading them.
    _LOCK_OFFSET = 0x7FFF_FFFF

    def _try_lock(fd: int) -> bool:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        try:
            os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, position, os.SEEK_SET)
        return True

    def _unlock(fd: int) -> None:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        try:
            os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        finally:
            os.lseek(fd, position, os.SEEK_SET)

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


_held: set[tuple[int, int]] = set()  # (device, inode) of the ledgers this process locked


class SessionLock:
    """The lock held on one ledger's descriptor; `release()` (or closing the descriptor, or
    process death) gives it up. The descriptor belongs to the ledger, not to the lock."""

    def __init__(self, fd: int, path: Path, session_id: str, key: tuple[int, int]) -> None:
        self.path = path
        self.session_id = session_id
        self._fd: int | None = fd
        self._key = key

    @classmethod
    def acquire(cls, fd: int, path: Path, session_id: str) -> SessionLock:
        """Lock the open ledger `fd` or raise SessionLockedError naming the holder."""
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        if not _try_lock(fd):
            if key in _held:
                who = f"pid {os.getpid()}, this process"
            else:
                holder = _holder_pid(info.st_dev, info.st_ino)
                who = f"pid {holder}" if holder else "another process"
            raise SessionLockedError(
                f"session {session_id} is open elsewhere ({who}); close it there first"
            )
        _held.add(key)
        return cls(fd, path, session_id, key)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _held.discard(self._key)
        with contextlib.suppress(OSError):  # closing the descriptor releases it anyway
            _unlock(fd)


def _holder_pid(device: int, inode: int) -> int | None:
    """The pid holding a flock on the file, from /proc/locks (Linux); None elsewhere."""
    wanted = f"{os.major(device):02x}:{os.minor(device):02x}:{inode}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a "->" marks waiters)
                fields = line.split()
                if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
                    continue
                if fields[5] == wanted and fields[4].isdigit():
                    return int(fields[4])
    except OSError:
        return None
    return None
