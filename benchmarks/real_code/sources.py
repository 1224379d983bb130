"""The code the real-code suite works on: source distributions from PyPI, and package tarballs
from npm, pinned by version and hash, fetched with pip (or `npm pack`) when a benchmark first
needs them and kept in a cache (`~/.cache/agent-server/sources`, or
`$AGENT_SERVER_SOURCES_CACHE`), as `bench peers` keeps the clients it installs. Nothing of
them is committed here."""

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
from typing import Literal

# Where a source comes from: an sdist from PyPI (pip), or a tarball from npm (`npm pack`).
Registry = Literal["pypi", "npm"]
PYPI: Registry = "pypi"
NPM: Registry = "npm"


@dataclass(frozen=True, slots=True)
class Source:
    """A pinned source distribution: what pip (or npm) fetches, and the hash it must have."""

    name: str  # the project's name on its registry
    version: str
    sha256: str
    license: str  # as its LICENSE file states
    registry: Registry = PYPI

    @property
    def requirement(self) -> str:
        if self.registry == NPM:
            return f"{self.name}@{self.version}"
        return f"{self.name}=={self.version}"

    @property
    def file_names(self) -> tuple[str, ...]:
        """The names the fetched archive has in the cache: an sdist's (its project's name as
        written, or with underscores), or the tarball `npm pack` writes (a scope's `@` dropped
        and its `/` made a dash: `@scope/name` 1.0 is `scope-name-1.0.tgz`)."""
        if self.registry == NPM:
            return (f"{self.name.removeprefix('@').replace('/', '-')}-{self.version}.tgz",)
        return (f"{self.name}-{self.version}.tar.gz",
                f"{self.name.replace('-', '_')}-{self.version}.tar.gz")


class SourceError(RuntimeError):
    """A source that cannot be fetched, or that is not what was pinned."""


def cache_dir() -> Path:
    configured = os.environ.get("AGENT_SERVER_SOURCES_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "agent-server" / "sources"


def archive(source: Source, cache: Path | None = None) -> Path:
    """The source's sdist (or npm tarball), fetched with `pip download` (or `npm pack`) if the
    cache does not hold it yet, its SHA-256 checked."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    found = _cached(source, cache)
    if found is None:
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            tool, command, pattern = _fetch_command(source, scratch)
            try:
                done = subprocess.run(command, capture_output=True, text=True)
            except FileNotFoundError as error:
                raise SourceError(f"{tool} could not fetch {source.requirement}: {error}"
                                  ) from error
            fetched = next(Path(scratch).glob(pattern), None)
            if done.returncode != 0 or fetched is None:
                raise SourceError(f"{tool} could not fetch {source.requirement}: "
                                  f"{done.stderr.strip()[-500:]}")
            _check(source, fetched)
            # Kept under a name `_cached` finds again.
            found = cache / (fetched.name if fetched.name in source.file_names
                             else source.file_names[0])
            shutil.move(str(fetched), found)
    _check(source, found)
    return found


def _fetch_command(source: Source, scratch: str) -> tuple[str, list[str], str]:
    """The tool that fetches the source into `scratch`, its command, and the pattern of the
    file it writes there."""
    if source.registry == NPM:
        return ("npm", [shutil.which("npm") or "npm", "pack", source.requirement,
                        "--pack-destination", scratch, "--ignore-scripts", "--silent"],
                "*.tgz")
    return ("pip", [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                    ":all:", "--disable-pip-version-check", "--quiet", "--dest", scratch,
                    source.requirement], "*.tar.gz")


def _cached(source: Source, cache: Path) -> Path | None:
    return next((cache / name for name in source.file_names if (cache / name).is_file()),
                None)


def _check(source: Source, path: Path) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != source.sha256:
        raise SourceError(f"{path.name}: SHA-256 {digest}, expected {source.sha256} "
                          f"({source.requirement} as pinned)")


def extract(source: Source, dest: Path, cache: Path | None = None) -> None:
    """The sdist's tree (without its top directory: an npm tarball's is `package/`) written into
    `dest`: its files, folders and links, but for a link that leads out of the tree (tarfile's
    "data" filter refuses it; docutils' sdist links its test data's stylesheets to the
    writers' own)."""
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
