"""The real-code suite's source trees (benchmarks/real_code/sources.py)."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from benchmarks.real_code.sources import Source, extract


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
