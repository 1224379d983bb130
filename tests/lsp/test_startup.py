"""The compiled-code cache of attrs-generated methods: classes behave the same from it, and a
broken cache file only costs compiling again."""

from __future__ import annotations

from pathlib import Path

import attrs

from agent_server.lsp.startup import CompiledCodeCache, cached_attrs_compilation


def make_class() -> type:
    @attrs.define
    class Point:
        x: int
        y: int = 0

    return Point


def test_classes_made_through_the_cache_behave_alike(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    with cached_attrs_compilation(path) as cache:
        assert cache is not None
        first = make_class()
    assert path.exists()
    saved = path.read_bytes()
    with cached_attrs_compilation(path) as cache:
        assert cache is not None
        second = make_class()
        assert cache._new == 0  # every method came from the file
    assert path.read_bytes() == saved  # nothing new: not rewritten
    for cls in (first, second):
        point = cls(1, y=2)
        assert (point.x, point.y) == (1, 2)
        assert repr(point).endswith("Point(x=1, y=2)")
        assert point == cls(1, 2) and point != cls(2, 2)


def test_a_broken_cache_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    path.write_bytes(b"\x00garbage")
    assert CompiledCodeCache(path)._codes == {}
    with cached_attrs_compilation(path):
        cls = make_class()
    assert cls(3).y == 0
    assert CompiledCodeCache(path)._codes
