"""Writing one of the server's own files (a session's list entry, an index, a cache, an
approval) whole or not at all.

The data goes to a temporary file beside the target, with a name unique to the call, and
replaces the target by a rename: a reader sees the old content or the new, never half of
it, and two writers at once (the session list on its thread and a ledger's sync, two
servers on one sessions folder) never mix their bytes or lose their file to the other's
rename. The temporary file is created private (0600), never over an existing one, and is
removed if anything fails. (No `tempfile`: the LSP server's start-up cache writes here, and
that import costs more than the write.)

Files in the workspace are written by the tools' own descriptor-relative path
(`agent/tools/paths.py`), which must not follow links the model may have planted.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_whole(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically; `mode` sets its permissions (else private)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
