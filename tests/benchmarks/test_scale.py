"""The scaling benchmark's figures on a small tree (the real workspaces take sdists from PyPI
and a gigabyte: `make bench-scale`): each measure runs and gives its figures, and the report
prints them with their growth."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import scale

pytestmark = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for package in range(3):
        for module in range(4):
            path = tmp_path / f"pkg{package}" / f"m{module}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"def f{module}():\n    return g{(module + 1) % 4}()\n\n"
                            f"def g{module}():\n    return {module}\n")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "index.js").write_text("module.exports = 1;\n")
    scale._log(tmp_path / scale.LOG, 6 * 1024 * 1024)  # over the line index's 4 MiB
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


def test_every_figure_is_measured_and_reported(tree: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale, "GROWING_SECONDS", 1.0)
    figures: dict[str, float] = {"files": float(scale.count_files(tree))}
    for name, measure in scale.MEASURES.items():
        if name == "sandbox":
            continue  # needs bubblewrap: the sandbox's own tests cover it
        figures.update(measure(tree))
    assert figures["files"] == 12 + 1 + 1  # the modules, node_modules' file, the log
    for key in ("log_page_ms", "mention_keystroke_ms", "repo_map_second_s", "grep_ms",
                "rg_ms", "find_ms", "find_direct_ms"):
        assert figures[key] > 0, key
    # The log grew under the watch: the turn's own check (a stat) says so once, however late
    # the watcher's notice comes on a loaded machine (that one is only counted).
    assert figures["growing_log_notes"] == 1
    table = scale.report({"one-sdist": figures, "monorepo": {**figures, "files": 28.0}})
    assert "| files in the tree | 14 | 28 | 2.0x |" in table
    assert "grep/rg" in table
