"""The project's instruction files in the system prompt: read as the read tool reads."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agent_server.agent.system_prompt import MAX_INSTRUCTION_CHARS, build_system_prompt


def test_the_instruction_files_are_in_the_prompt_a_link_inside_followed(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Run the tests with make check.\n")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    prompt = build_system_prompt(tmp_path)
    assert '<project-instructions file="AGENTS.md">\nRun the tests with make check.' in prompt
    assert '<project-instructions file="CLAUDE.md">\nRun the tests with make check.' in prompt


def test_a_link_out_of_the_workspace_is_left_out_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A cloned repository's AGENTS.md leading to the user's credentials.
    secret = tmp_path / "home" / "credentials"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = SECRET\n")
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "AGENTS.md").symlink_to("../home/credentials")
    (workspace / "CLAUDE.md").write_text("Be brief.\n")
    with caplog.at_level(logging.WARNING):
        prompt = build_system_prompt(workspace)
    assert "SECRET" not in prompt and "Be brief." in prompt
    assert "AGENTS.md left out of the system prompt" in caplog.text


def test_a_named_pipe_does_not_block_the_start(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")  # no writer: reading it would wait for ever
    assert "project-instructions" not in build_system_prompt(tmp_path)


def test_a_huge_file_is_cut(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("rule\n" * 100_000)
    prompt = build_system_prompt(tmp_path)
    assert "[... truncated]" in prompt
    assert prompt.count("rule") <= MAX_INSTRUCTION_CHARS // 5 + 1
