"""agent-server's entry for the ACP agent registry (docs/acp.md) and the agent's auth method,
against the registry's own checks.

The registry (github.com/agentclientprotocol/registry, commit 3de1678, Apache-2.0) checks an
entry in CI (.github/workflows/build-registry.yml) with `build_registry.py` (the entry against
`agent.schema.json`, stored here unchanged as tests/acp/registry/agent.schema.json; the id
equal to its folder's name; a semantic version; a `uvx` package pinned to that version) and
with `verify_agents.py --auth-check` (its `client.py`: start the agent, send the `initialize`
below, read `authMethods`: a method's type is its `type`, else `agent`/`terminal` from `_meta`
keys, else `agent`; at least one must be `agent` or `terminal`). Their rules are restated here
(the scripts are not copied); what needs the network (the package on PyPI) is not checked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jsonschema
import pytest
from acp import RequestError

import agent_server
from agent_server.sim.server import SimServer
from tests.acp.conftest import acp_args, start_acp

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).parent / "registry" / "agent.schema.json"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

# client.py's initialize request, as the registry's auth check sends it.
REGISTRY_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": 1,
        "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
        "clientCapabilities": {
            "terminal": True,
            "fs": {"readTextFile": True, "writeTextFile": True},
            "_meta": {"terminal_output": True, "terminal-auth": True},
        },
    },
}


ENTRY = ROOT / "registry" / "agent-server"


def entry() -> dict[str, Any]:
    """registry/agent-server/agent.json: the folder as the registry takes it."""
    data: dict[str, Any] = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    return data


def test_the_icon_is_16_by_16_in_the_editors_colour_only() -> None:
    """build_registry.py's icon check: an SVG, 16x16, monochrome with `currentColor` (a
    hard-coded colour fails: the editor themes it)."""
    icon = ElementTree.parse(ENTRY / "icon.svg").getroot()
    assert icon.tag == "{http://www.w3.org/2000/svg}svg"
    assert (icon.get("width"), icon.get("height"), icon.get("viewBox")) == ("16", "16", "0 0 16 16")
    colours = {
        element.get(attribute)
        for element in icon.iter()
        for attribute in ("fill", "stroke")
        if element.get(attribute) is not None
    }
    assert colours and colours <= {"currentColor", "none"}, colours
    assert "style" not in (ENTRY / "icon.svg").read_text()


def test_the_entry_is_named_by_its_folder_and_offered_to_docs() -> None:
    assert entry()["id"] == ENTRY.name
    assert "registry/agent-server/" in (ROOT / "docs" / "acp.md").read_text(encoding="utf-8")


def test_the_entry_passes_the_registrys_schema() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(entry(), schema)
    # The schema can refuse: an entry without a distribution is not one.
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**entry(), "distribution": {}}, schema)


def test_the_entry_installs_this_package_at_this_version() -> None:
    agent = entry()
    version = PROJECT["version"]
    # build_registry.py: the folder is named by the id; a semantic version; uvx pinned to it.
    assert agent["id"] == "agent-server" and re.fullmatch(r"[a-z][a-z0-9-]*", agent["id"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", agent["version"])
    assert agent["version"] == version == agent_server.__version__
    uvx = agent["distribution"]["uvx"]
    pinned = re.search(r"[=@]+([\d.]+)", uvx["package"])
    assert pinned is not None and pinned.group(1) == version
    assert uvx["package"] == f"{PROJECT['name']}=={version}"
    # `uvx PACKAGE acp` runs the command named after the package, with `acp`.
    assert PROJECT["name"] in PROJECT["scripts"] and uvx["args"] == ["acp"]
    assert agent["license"] == PROJECT["license"]


def auth_types(methods: list[dict[str, Any]]) -> list[str]:
    """client.py's parse_auth_methods: the type of each method."""
    types = []
    for method in methods:
        kind = method.get("type")
        meta = method.get("_meta") or {}
        if not kind and isinstance(meta, dict):
            kind = "terminal" if "terminal-auth" in meta else "agent" if "agent-auth" in meta else None
        types.append(kind or "agent")
    return types


def test_the_agent_passes_the_registrys_auth_check(tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "dumb", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    env.pop("ANTHROPIC_API_KEY", None)  # the check runs without any key
    agent = Path(sys.executable).with_name("agent-server")
    answer = subprocess.run(
        [str(agent), "acp"],
        input=json.dumps(REGISTRY_INITIALIZE) + "\n",
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    response = json.loads(answer.stdout.splitlines()[0])
    methods = response["result"]["authMethods"]
    assert {"agent", "terminal"} & set(auth_types(methods)), methods
    assert [m["id"] for m in methods] == ["api-key", "login"]
    assert auth_types(methods) == ["agent", "terminal"] and methods[1]["args"] == ["login"]
    assert "ANTHROPIC_API_KEY" in methods[0]["description"]


def test_started_without_a_pipe_the_agent_ends_saying_why(tmp_path: Path) -> None:
    """verify_agents.py starts the agent with stdin from /dev/null, which the event loop
    cannot watch: the agent said nothing and waited forever; now it ends at once."""
    agent = Path(sys.executable).with_name("agent-server")
    ended = subprocess.run(
        [str(agent), "acp"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        cwd=tmp_path, timeout=120, check=False,
    )
    assert ended.returncode == 2 and "stdin must be a pipe" in ended.stderr


async def test_authenticate_checks_the_key_and_names_the_variable(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--provider", "anthropic", "--api-key-env", "AGENT_SERVER_TEST_UNSET_KEY"]
    async with start_acp(args, tmp_path) as acp:
        assert [m.id for m in acp.init.auth_methods or []] == ["api-key", "login"]
        with pytest.raises(RequestError) as refused:
            await acp.conn.authenticate(method_id="api-key")
        assert refused.value.code == -32000
        assert "AGENT_SERVER_TEST_UNSET_KEY" in str(refused.value)
        with pytest.raises(RequestError) as unknown:
            await acp.conn.authenticate(method_id="oauth")
        assert unknown.value.code == -32602
        with pytest.raises(RequestError) as no_session:
            await acp.new_session(workspace)
        assert no_session.value.code == -32000  # an editor then offers the method
    # The terminal login: the client runs the agent with `login`; the key is kept for the
    # variable, and the next agent has it without the variable.
    agent = Path(sys.executable).with_name("agent-server")
    key = "sk-ant-test-" + "k" * 20
    logged_in = await asyncio.to_thread(
        subprocess.run,
        [str(agent), "acp", "login", *args], input=key + "\n", capture_output=True, text=True,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}, timeout=120,
        check=False,
    )
    assert logged_in.returncode == 0, logged_in.stderr
    assert key not in logged_in.stdout + logged_in.stderr
    async with start_acp(args, tmp_path) as acp:
        await asyncio.wait_for(acp.conn.authenticate(method_id="login"), 60)
        await acp.new_session(workspace)
    monkeypatch.setenv("AGENT_SERVER_TEST_SET_KEY", "sk-ant-test-" + "x" * 20)
    args = ["--provider", "anthropic", "--api-key-env", "AGENT_SERVER_TEST_SET_KEY"]
    async with start_acp(args, tmp_path) as acp:
        await asyncio.wait_for(acp.conn.authenticate(method_id="api-key"), 60)


async def test_the_simulator_needs_no_key(sim: SimServer, tmp_path: Path) -> None:
    async with start_acp(acp_args(sim, tmp_path), tmp_path) as acp:
        await acp.conn.authenticate(method_id="api-key")
