"""Reading MCP server configuration from the places users keep it."""

from __future__ import annotations

import json
from pathlib import Path

from agent_server.agent.mcp.config import (
    load_server_configs,
    parse_server,
    servers_from_acp,
)
from agent_server.agent.settings import settings_from_json


def write(path: Path, servers: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_sources_override_by_name_and_disabled_servers_drop_out(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    user = write(
        tmp_path / "user.json",
        {
            "db": {"command": "user-db"},
            "docs": {"command": "docs-server"},
            "old": {"command": "old-server"},
        },
    )
    write(
        workspace / ".mcp.json",
        {"db": {"command": "project-db", "args": ["--ro"]}, "old": {"disabled": True}},
    )
    configs = load_server_configs(
        workspace,
        settings_servers={"web": {"type": "http", "url": "https://example.test/mcp"}},
        user_file=user,
        env={},
    )
    assert [c.name for c in configs] == ["db", "docs", "web"]
    db = configs[0]
    assert (db.command, db.args, db.cwd, db.source) == (
        "project-db", ("--ro",), str(workspace), str(workspace / ".mcp.json")
    )
    assert configs[2].transport == "http" and configs[2].source == "mcp.servers"
    without_workspace = load_server_configs(
        workspace, user_file=user, workspace_file=False, env={}
    )
    assert [c.command for c in without_workspace] == ["user-db", "docs-server", "old-server"]


def test_variables_expand_and_secrets_are_remembered(tmp_path: Path) -> None:
    env = {"GITHUB_TOKEN": "ghp_abcdef123456", "HOME": "/home/me", "REGION": "eu-west-1"}
    stdio = parse_server(
        "gh",
        {
            "command": "${HOME}/bin/gh-mcp",
            "args": ["--root", "${workspaceFolder}", "--mode=${MODE:-fast}"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "REGION": "${env:REGION}"},
        },
        "test",
        workspace=tmp_path,
        env=env,
    )
    assert stdio.error is None
    assert stdio.command == "/home/me/bin/gh-mcp"
    assert stdio.args == ("--root", str(tmp_path), "--mode=fast")
    assert dict(stdio.env) == {"GITHUB_TOKEN": "ghp_abcdef123456", "REGION": "eu-west-1"}
    # Env values the server gets are secrets; HOME used in the command line is not.
    assert "ghp_abcdef123456" in stdio.secrets and "/home/me" not in stdio.secrets
    http = parse_server(
        "api",
        {"url": "https://api.test/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}},
        "test",
        workspace=tmp_path,
        env={"API_TOKEN": "tok-987654"},
    )
    assert dict(http.headers) == {"Authorization": "Bearer tok-987654"}
    assert "tok-987654" in http.secrets
    assert "tok-987654" not in repr(http) and "tok-987654" not in http.display


def test_a_missing_variable_names_itself_and_what_to_do(tmp_path: Path) -> None:
    config = parse_server(
        "db", {"command": "db", "env": {"PASSWORD": "${DB_PASSWORD}"}}, "f", workspace=tmp_path,
        env={},
    )
    assert config.error is not None
    assert "DB_PASSWORD" in config.error and "env.PASSWORD" in config.error
    assert "Set MCP Secret" in config.error


def test_bad_entries_become_failed_servers_not_errors(tmp_path: Path) -> None:
    write(
        tmp_path / ".mcp.json",
        {
            "ok": {"command": "fine"},
            "nocommand": {"args": ["x"]},
            "badtype": {"type": "websocket", "url": "ws://x"},
            "typo": {"command": "x", "argz": []},
            "badurl": {"type": "http", "url": "localhost:3000"},
        },
    )
    configs = {c.name: c for c in load_server_configs(tmp_path, user_file=None, env={})}
    assert configs["ok"].error is None
    assert "needs 'command'" in (configs["nocommand"].error or "")
    assert "'type' must be one of" in (configs["badtype"].error or "")
    assert "unknown keys ['argz']" in (configs["typo"].error or "")
    assert "needs 'url'" in (configs["badurl"].error or "")


def test_a_broken_file_is_reported_and_the_other_sources_still_load(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text("{not json", encoding="utf-8")
    user = write(tmp_path / "user.json", {"docs": {"command": "docs"}})
    configs = load_server_configs(tmp_path, user_file=user, env={})
    assert [c.name for c in configs] == ["(.mcp.json)", "docs"]
    assert "not valid JSON" in (configs[0].error or "")


def test_acp_session_servers_convert(tmp_path: Path) -> None:
    configs = servers_from_acp(
        [
            {"name": "fs", "command": "mcp-fs", "args": ["."], "env": [{"name": "A", "value": "1"}]},
            {
                "type": "http",
                "name": "web",
                "url": "https://w.test/mcp",
                "headers": [{"name": "X-Api-Key", "value": "key-123456"}],
            },
            {"command": "no-name"},
        ],
        workspace=tmp_path,
        env={},
    )
    assert [c.name for c in configs] == ["fs", "web", "(mcpServers[2])"]
    assert dict(configs[0].env) == {"A": "1"} and configs[0].args == (".",)
    assert configs[1].transport == "http" and "key-123456" in configs[1].secrets
    assert configs[2].error is not None


def test_settings_read_the_mcp_section() -> None:
    settings = settings_from_json(
        {"mcp": {"servers": {"x": {"command": "y"}}, "startupTimeout": 5, "userFile": ""}}
    )
    assert settings.mcp.servers == {"x": {"command": "y"}}
    assert settings.mcp.startup_timeout == 5.0 and settings.mcp.user_file == ""
    assert settings.mcp.workspace_file is True and settings.mcp.tool_timeout == 600.0


def test_workspace_servers_carry_the_digest_of_the_bytes_read(tmp_path: Path) -> None:
    import hashlib

    path = write(tmp_path / ".mcp.json", {"db": {"command": "db-server"}})
    user = write(tmp_path / "user.json", {"mine": {"command": "mine"}})
    configs = {c.name: c for c in load_server_configs(tmp_path, user_file=user, env={})}
    assert configs["db"].digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert configs["mine"].digest is None  # the user's own file is not held


def test_an_empty_or_placeheld_workspace_file_names_no_server(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").mkdir()  # what a sandboxed command's placeholder looks like
    assert load_server_configs(tmp_path, user_file=None, env={}) == ()
    (tmp_path / ".mcp.json").rmdir()
    (tmp_path / ".mcp.json").write_text("\n")
    assert load_server_configs(tmp_path, user_file=None, env={}) == ()
