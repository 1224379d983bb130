"""Fixtures for the tool tests: a real workspace directory and a context around it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def spill_dir(tmp_path: Path) -> Path:
    return tmp_path / "session" / "spill"


@pytest.fixture
def ctx(workspace: Path, spill_dir: Path) -> ToolContext:
    return ToolContext(workspace=workspace, spill_dir=spill_dir)


@pytest.fixture
def real_workspace(workspace: Path) -> Path:
    """The workspace with symlinks resolved, as tools report it."""
    return Path(os.path.realpath(workspace))
