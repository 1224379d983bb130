"""The real-code suite's source trees (benchmarks/real_code/sources.py)."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.real_code.sources import NPM, Source, SourceError, _fetch_command, archive, extract


def sdist(cache: Path) -> Source:
    """demo-1.0: a file, a link to it from a folder below, a hard link, and two links that
    lead out of the tree."""
    path = cache / "demo-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = b"hello\n"
        member = tarfile.TarInfo("demo-1.0/a.txt")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
        for name, kind, target in (("demo-1.0/sub/a.txt", tarfile.SYMTYPE, "../a.txt"),
                                   ("demo-1.0/hard.txt", tarfile.LNKTYPE, "demo-1.0/a.txt"),
                                   ("demo-1.0/up", tarfile.SYMTYPE, "../../outside"),
                                   ("demo-1.0/abs", tarfile.SYMTYPE, "/etc/hostname")):
            link = tarfile.TarInfo(name)
            link.type, link.linkname = kind, target
            tar.addfile(link)
    return Source("demo", "1.0", hashlib.sha256(path.read_bytes()).hexdigest(), "MIT")


def test_links_inside_the_tree_are_kept_and_links_out_of_it_left_out(tmp_path: Path) -> None:
    source, tree = sdist(tmp_path), tmp_path / "tree"
    extract(source, tree, cache=tmp_path)
    assert (tree / "sub" / "a.txt").is_symlink()
    assert (tree / "sub" / "a.txt").read_text() == "hello\n"
    assert (tree / "hard.txt").read_text() == "hello\n"
    assert not (tree / "up").is_symlink() and not (tree / "abs").is_symlink()
    assert sorted(p.name for p in tree.iterdir()) == ["a.txt", "hard.txt", "sub"]


def npm_tarball(cache: Path, name: str, file_name: str) -> Source:
    """A tarball as `npm pack` writes it, its tree under `package/`, already in the cache."""
    path = cache / file_name
    with tarfile.open(path, "w:gz") as tar:
        for member_name, data in (("package/package.json", b'{"name": "x"}\n'),
                                  ("package/lib/index.js", b"module.exports = 1\n")):
            member = tarfile.TarInfo(member_name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return Source(name, "1.2.3", hashlib.sha256(path.read_bytes()).hexdigest(), "ISC",
                  registry=NPM)


def test_an_npm_tarball_is_found_in_the_cache_by_the_name_npm_pack_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No network: the tarball is in the cache under `npm pack`'s name (a scope's `@` dropped,
    its `/` a dash), so nothing is fetched; its `package/` is stripped like an sdist's top."""
    def no_fetch(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"fetched: {args}")

    monkeypatch.setattr(subprocess, "run", no_fetch)
    plain = npm_tarball(tmp_path, "tiny", "tiny-1.2.3.tgz")
    scoped = npm_tarball(tmp_path, "@acme/tiny", "acme-tiny-1.2.3.tgz")
    assert (plain.requirement, scoped.requirement) == ("tiny@1.2.3", "@acme/tiny@1.2.3")
    assert archive(plain, tmp_path) == tmp_path / "tiny-1.2.3.tgz"
    assert archive(scoped, tmp_path) == tmp_path / "acme-tiny-1.2.3.tgz"
    extract(scoped, tmp_path / "tree", cache=tmp_path)
    assert (tmp_path / "tree" / "lib" / "index.js").read_text() == "module.exports = 1\n"
    assert sorted(p.name for p in (tmp_path / "tree").iterdir()) == ["lib", "package.json"]
    with pytest.raises(SourceError, match="SHA-256"):
        archive(replace(plain, sha256="0" * 64), tmp_path)


def test_npm_pack_fetches_what_the_cache_does_not_hold(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The command run for an npm source, and the tarball kept where `_cached` finds it; a
    PyPI source still goes to pip."""
    (tmp_path / "made").mkdir()
    made = npm_tarball(tmp_path / "made", "tiny", "tiny-1.2.3.tgz")
    commands: list[list[str]] = []

    def pack(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        destination = Path(command[command.index("--pack-destination") + 1])
        shutil.copy(tmp_path / "made" / "tiny-1.2.3.tgz", destination)
        return subprocess.CompletedProcess(command, 0, "tiny-1.2.3.tgz\n", "")

    monkeypatch.setattr(subprocess, "run", pack)
    cache = tmp_path / "cache"
    assert archive(made, cache) == cache / "tiny-1.2.3.tgz"
    assert commands[0][1:4] == ["pack", "tiny@1.2.3", "--pack-destination"]
    assert archive(made, cache) == cache / "tiny-1.2.3.tgz" and len(commands) == 1
    assert _fetch_command(Source("demo", "1.0", "0" * 64, "MIT"), "s")[1][1:4] == [
        "-m", "pip", "download"]
