"""What a release uploads: the sdist and the wheel `make dist` builds (hatchling, as pip
would), their metadata, and the version said the same everywhere (issue 48: nothing prepared
a release a user could install by name)."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import agent_server

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the sdist), built from this checkout."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-d", str(out)],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


def test_the_version_is_one_everywhere() -> None:
    version = PROJECT["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert agent_server.__version__ == version
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    newest = re.search(r"^## (\S+)", changelog, re.M)
    assert newest is not None and newest.group(1) == version
    entry = (ROOT / "registry" / "agent-server" / "agent.json").read_text(encoding="utf-8")
    assert f'"version": "{version}"' in entry and f"agent-server=={version}" in entry


def test_the_wheel_installs_the_command_with_its_licence_and_readme(
    built: tuple[Path, Path],
) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"agent_server-{PROJECT['version']}.dist-info"
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert metadata["Name"] == "agent-server" and metadata["Version"] == PROJECT["version"]
    assert metadata["License-Expression"] == "MIT"
    assert f"{info}/licenses/LICENSE" in names
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "make demo" in metadata.get_payload()  # the README is the project's page
    assert "agent-server = agent_server.cli:main" in entry_points
    # Every file of the package the repository tracks is in the wheel (data files too: the
    # simulator's scenarios, py.typed), and nothing from outside it.
    tracked = subprocess.run(
        ["git", "ls-files", "agent_server"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    assert set(tracked) <= names, sorted(set(tracked) - names)
    assert {name.split("/")[0] for name in names} == {"agent_server", info}


def test_the_sdist_builds_the_same_and_holds_no_installed_trees(built: tuple[Path, Path]) -> None:
    _, sdist = built
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = f"agent_server-{PROJECT['version']}"
    assert f"{top}/pyproject.toml" in names and f"{top}/LICENSE" in names
    assert f"{top}/agent_server/cli.py" in names
    assert not [n for n in names if "node_modules" in n or "/.venv/" in n or "__pycache__" in n]
