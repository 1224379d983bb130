"""The settings file of `agent-server chat` (and `acp`), as a user meets it: found where the
README says (`config.json`, `.yaml`), its mistakes named with the file they are in."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.console.test_commands import agent_server


def chat(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """An interactive chat, its settings from `<tmp>/cfg/agent-server/`, quit at once."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "COLUMNS": "400",
    }
    return agent_server(
        "chat", "--sessions-dir", str(tmp_path / "s"), *flags,
        cwd=tmp_path, env=env, stdin="/quit\n",
    )


def settings_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "cfg" / "agent-server" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["config.yaml", "config.yml"])
def test_a_yaml_settings_file_in_the_config_directory_is_read(tmp_path: Path, name: str) -> None:
    settings_file(tmp_path, name, "provider: sim\n")
    done = chat(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sim sim-small"), done.stdout


def test_two_settings_files_are_an_error_naming_both(tmp_path: Path) -> None:
    json_file = settings_file(tmp_path, "config.json", '{"provider": "sim"}')
    yaml_file = settings_file(tmp_path, "config.yaml", "provider: anthropic\n")
    done = chat(tmp_path)
    assert done.returncode == 2
    assert str(json_file) in done.stderr and str(yaml_file) in done.stderr


def test_a_bad_value_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = settings_file(tmp_path, "config.json", '{"provider": "sim", "maxSteps": "x"}')
    done = chat(tmp_path)
    assert done.returncode == 2
    assert f"config file {path}: setting 'maxSteps' must be a whole number" in done.stderr


def test_an_unknown_key_is_named_with_its_file_and_the_rest_applies(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, "config.json", '{"provider": "sim", "compaction": {"thresold": 0.5}}'
    )
    done = chat(tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"config file {path}: no setting is called 'compaction.thresold'" in done.stderr
    assert done.stdout.startswith("sim sim-small"), done.stdout


@pytest.mark.parametrize("window", ["-5", "0"])
def test_a_context_window_that_is_no_size_is_refused_without_a_traceback(
    tmp_path: Path, window: str
) -> None:
    done = chat(tmp_path, "--provider", "openai-chat", "--base-url", "http://127.0.0.1:9/v1",
                "--model", "local-model", "--context-window", window)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"setting 'contextWindow' must be at least 1, not {window}" in done.stderr


def test_a_negative_memory_limit_is_refused() -> None:
    from agent_server.agent.settings import settings_from_json
    from agent_server.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'tools.limits.memoryMB' must be at least 0"):
        settings_from_json({"tools": {"limits": {"memoryMB": -1}}})
    assert settings_from_json({"tools": {"limits": {"memoryMB": 0}}}).tools.limits.memory_mb == 0
