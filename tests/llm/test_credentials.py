"""Keys `agent-server login` keeps (llm/credentials.py): read when the variable is not set,
readable by the user alone, never through a link, scrubbed like a key from the environment;
and the login and logout commands."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent_server.agent.model_setup import secrets_of
from agent_server.agent.settings import AgentSettings
from agent_server.errors import MissingApiKeyError
from agent_server.llm.credentials import (
    credentials_path,
    forget_api_key,
    read_api_key,
    store_api_key,
    stored_keys,
)
from agent_server.llm.providers import resolve_api_key

KEY = "sk-ant-test-" + "a" * 24


def test_a_kept_key_is_read_when_the_variable_is_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError) as missing:
        resolve_api_key("anthropic")
    assert "agent-server login" in missing.value.message
    path = store_api_key("ANTHROPIC_API_KEY", f"  {KEY}\n")
    assert path == credentials_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_api_key("anthropic") == KEY
    assert read_api_key("ANTHROPIC_API_KEY", {"ANTHROPIC_API_KEY": "from-env"}) == "from-env"
    # Scrubbed from every tool output, as a key in the environment is.
    assert KEY in secrets_of(AgentSettings(provider="anthropic"), {})
    store_api_key("OPENAI_API_KEY", "sk-openai-test")
    assert forget_api_key("ANTHROPIC_API_KEY") and not forget_api_key("ANTHROPIC_API_KEY")
    assert stored_keys() == {"OPENAI_API_KEY": "sk-openai-test"}
    assert forget_api_key(None) and stored_keys() == {}


def test_a_file_that_is_no_key_file_is_not_read(tmp_path: Path) -> None:
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"ANTHROPIC_API_KEY": "linked"}')
    os.symlink(elsewhere, path)
    assert stored_keys() == {}
    path.unlink()
    for text in ("[1, 2]", "not json", '{"ANTHROPIC_API_KEY": 5}'):
        path.write_text(text)
        assert stored_keys() == {}


def run(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_server", *args], input=key, capture_output=True,
        text=True, timeout=120, check=False, env=dict(os.environ),
    )


def test_login_keeps_the_configured_providers_key_and_logout_forgets_it() -> None:
    done = run("login", "--provider", "openai-responses", key=KEY + "\n")
    assert done.returncode == 0, done.stderr
    assert "OPENAI_API_KEY" in done.stdout and KEY not in done.stdout + done.stderr
    assert stored_keys() == {"OPENAI_API_KEY": KEY}
    refused = run("login", "--provider", "anthropic", key="two words\n")
    assert refused.returncode == 1 and "nothing was kept" in refused.stderr
    assert run("login", "--provider", "sim", key=KEY).returncode == 2  # needs no key
    assert "Forgot the key kept for OPENAI_API_KEY" in run(
        "logout", "--provider", "openai-responses").stdout
    assert stored_keys() == {}
