"""What makes `agent-server serve` answer `initialize` soon after it starts.

Most of a cold start is importing `lsprotocol.types`, which pygls needs whole: about 570
attrs classes, and for each attrs writes the source of `__init__`, `__repr__`, `__eq__`, ...
and compiles it, on every start (half of the import is `compile`). The code objects are the
same every time for the same source, so they are kept across starts, marshalled, in the user
cache directory: one file per Python and attrs version, keyed by a hash of each generated
source and its file name. A missing, unreadable or foreign cache file only means compiling
again; attrs versions without the hook this relies on are left alone.

The agent itself (sessions, tools, the provider SDKs) is not imported to answer
`initialize`: lsp/server.py loads it in the background after `initialized`, or on the first
request that needs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import CodeType
from typing import Any

from agent_server.whole_file import write_whole

log = logging.getLogger(__name__)


class CompiledCodeCache:
    """Code objects of attrs-generated methods, loaded from and saved to `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._codes: dict[bytes, CodeType] = {}
        self._new = 0
        self._lock = threading.Lock()
        try:
            loaded = marshal.loads(path.read_bytes())
            if isinstance(loaded, dict):
                self._codes = loaded
        except (OSError, EOFError, ValueError, TypeError):
            pass

    def compile(self, script: str, filename: str) -> CodeType:
        key = hashlib.blake2b(f"{filename}\0{script}".encode(), digest_size=16).digest()
        code = self._codes.get(key)
        if code is None:
            code = compile(script, filename, "exec")
            with self._lock:
                self._codes[key] = code
                self._new += 1
        return code

    def save(self) -> None:
        """Write the cache if anything was compiled since it was read (atomically)."""
        with self._lock:
            if not self._new:
                return
            data = marshal.dumps(self._codes)
            self._new = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(self.path, data)
        except OSError as exc:
            log.debug("cannot save the compiled-code cache %s: %s", self.path, exc)


def default_cache_path() -> Path:
    import attrs
    import platformdirs

    version = f"py{sys.version_info[0]}{sys.version_info[1]}-attrs{attrs.__version__}"
    return Path(platformdirs.user_cache_dir("agent-server")) / f"attrs-code-{version}.marshal"


@contextlib.contextmanager
def cached_attrs_compilation(path: Path | None = None) -> Iterator[CompiledCodeCache | None]:
    """While inside, attrs compiles its generated methods through the cache (None is given
    when this attrs cannot be hooked). The cache is saved on leaving."""
    try:
        from attr import _make
    except ImportError:
        yield None
        return
    original = getattr(_make, "_compile_and_eval", None)
    if original is None:
        yield None
        return
    cache = CompiledCodeCache(path or default_cache_path())

    def compile_and_eval(
        script: str,
        globs: dict[str, Any] | None,
        locs: Mapping[str, object] | None = None,
        filename: str = "",
    ) -> None:
        eval(cache.compile(script, filename), globs, locs)  # attrs' own generated source

    _make._compile_and_eval = compile_and_eval
    try:
        yield cache
    finally:
        _make._compile_and_eval = original
        cache.save()
