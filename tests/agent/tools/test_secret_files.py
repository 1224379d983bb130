"""Files that commonly hold secrets (issue 24): which names count, grep leaves them out and
says so, and write and edit refuse to put `[redacted]` into a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools.edit import EditTool
from agent_server.agent.tools.grep import GrepTool
from agent_server.agent.tools.paths import file_warnings, secret_file
from agent_server.agent.tools.write import WriteTool


@pytest.mark.parametrize(
    "name",
    [".env", ".env.local", ".env.production", "prod.env", "server.pem", "tls.key", "id_rsa",
     "id_ed25519", "store.p12", ".npmrc", ".pypirc", ".netrc", ".git-credentials", ".pgpass",
     "credentials", "credentials.json", "client_secret_123.json", "prod.tfvars",
     "terraform.tfstate", "secrets.yaml", "config/secrets.json", "deploy/.env"],
)
def test_secret_files_by_name(name: str) -> None:
    assert secret_file(name)


@pytest.mark.parametrize(
    "name",
    [".env.example", ".env.sample", ".env.template", "id_rsa.pub", "environment.py", "keys.py",
     "README.md", "secret_santa.py", "tokens.ts", "credentials.md"],
)
def test_ordinary_files_are_not(name: str) -> None:
    assert not secret_file(name)


def test_the_warning_names_the_file(workspace: Path) -> None:
    (workspace / ".env").write_text("A=1\n")
    assert file_warnings(workspace, [".env"]) == [".env may hold secrets (keys, passwords, tokens)"]
    assert file_warnings(workspace, ["app.py"]) == []


async def test_grep_leaves_secret_files_out_and_says_so(ctx: ToolContext, workspace: Path) -> None:
    (workspace / ".env").write_text("API_TOKEN=abc\n")
    (workspace / "app.py").write_text("token = os.environ['API_TOKEN']\n")
    for rg in ("auto", None):
        result = await run_tool(GrepTool(rg), {"pattern": "API_TOKEN"}, ctx)
        assert "app.py" in result.text and "abc" not in result.text
        assert "Left out matches in 1 file(s) that may hold secrets: .env" in result.text
        named = await run_tool(GrepTool(rg), {"pattern": "API", "path": ".env"}, ctx)
        assert named.is_error and "read tool, which asks" in named.text


async def test_write_and_edit_refuse_to_put_redacted_into_a_file(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "config.py").write_text('DB = "x"\nSECRET = "Zx81kQpL0vB7nMw2RtY6"\n')
    wrote = await run_tool(
        WriteTool(), {"path": "config.py", "content": 'DB = "y"\nSECRET = "[redacted]"\n'}, ctx
    )
    assert wrote.is_error and "stands for a secret" in wrote.text
    edited = await run_tool(
        EditTool(), {"path": "config.py", "oldText": 'DB = "x"', "newText": 'TOKEN = "[redacted]"'},
        ctx,
    )
    assert edited.is_error and "stands for a secret" in edited.text
    assert "Zx81kQpL0vB7nMw2RtY6" in (workspace / "config.py").read_text()
