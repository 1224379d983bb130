"""The code the real-code suite works on: source distributions from PyPI, pinned by version and
hash, fetched with pip when a benchmark first needs them and kept in a cache
(`~/.cache/agent-server/sources`, or `$AGENT_SERVER_SOURCES_CACHE`), as `bench peers` keeps the
clients it installs. Nothing of them is committed here."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Source:
    """A pinned source distribution: what pip fetches, and the hash it must have."""

    name: str  # the project's name on PyPI
    version: str
    sha256: str
    license: str  # as its LICENSE file states

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


class SourceError(RuntimeError):
    """A source that cannot be fetched, or that is not what was pinned."""


def cache_dir() -> Path:
    configured = os.environ.get("AGENT_SERVER_SOURCES_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "agent-server" / "sources"


def archive(source: Source, cache: Path | None = None) -> Path:
    """The source's sdist, fetched with `pip download` if the cache does not hold it yet, its
    SHA-256 checked."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    found = _cached(source, cache)
    if found is None:
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 "--disable-pip-version-check", "--quiet", "--dest", scratch,
                 source.requirement],
                capture_output=True, text=True,
            )
            fetched = next(Path(scratch).glob("*.tar.gz"), None)
            if done.returncode != 0 or fetched is None:
                raise SourceError(f"pip could not fetch {source.requirement}: "
                                  f"{done.stderr.strip()[-500:]}")
            _check(source, fetched)
            found = cache / fetched.name
            shutil.move(str(fetched), found)
    _check(source, found)
    return found


def _cached(source: Source, cache: Path) -> Path | None:
    names = {f"{source.name}-{source.version}.tar.gz",
             f"{source.name.replace('-', '_')}-{source.version}.tar.gz"}
    return next((cache / name for name in names if (cache / name).is_file()), None)


def _check(source: Source, path: Path) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != source.sha256:
        raise SourceError(f"{path.name}: SHA-256 {digest}, expected {source.sha256} "
                          f"({source.requirement} as pinned)")


def extract(source: Source, dest: Path, cache: Path | None = None) -> None:
    """The sdist's tree (without its top directory) written into `dest`: its files, folders
    and links, but for a link that leads out of the tree (tarfile's "data" filter refuses
    it; docutils' sdist links its test data's stylesheets to the writers' own)."""
    path = archive(source, cache)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path) as tar:
        members = tar.getmembers()
        top = members[0].name.split("/", 1)[0]
        for member in members:
            kept = member.isfile() or member.isdir() or member.issym() or member.islnk()
            if not member.name.startswith(top + "/") or not kept:
                continue
            member.name = member.name[len(top) + 1 :]
            if member.islnk():
                member.linkname = member.linkname.removeprefix(top + "/")
            if not member.name:
                continue
            try:
                tar.extract(member, dest, filter="data")
            except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
                continue
