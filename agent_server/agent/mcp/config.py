"""Which MCP servers a session starts: read from the places users already keep them.

Sources, later ones overriding earlier ones by server name:

1. the user-level file (`mcp.userFile`, default `<user config dir>/agent-server/mcp.json`),
2. the workspace's `.mcp.json` (the `mcpServers` shape of Claude Code and Cline), whose
   servers start only once the user approved the file's content (approval.py),
3. the `mcp.servers` setting,
4. servers a front end passes for one session (an ACP client's `mcpServers`).

An entry is a stdio server (`command`, `args`, `env`, `cwd`) or an HTTP one (`type` "http", or
"sse" for the older transport; `url`, `headers`). `${VAR}`, `${VAR:-default}` and `${env:VAR}`
take values from the server's environment (where the editor puts secrets from its secret
storage), `${workspaceFolder}` is the workspace. `trusted: true` lets the server's tools run
without asking; `autoApprove: [names]` (Cline's key) does it for some tools; `disabled: true`
leaves the server out; `timeout` bounds one tool call, in seconds.

A bad entry does not stop the others: it becomes a server that failed, with the reason.
Values taken from the environment, header values and secret-named env values are the
server's secrets: they are scrubbed from everything shown or sent to the model, and never
written to the ledger.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from agent_server.protocol import McpTransport as McpTransport

WORKSPACE_FILE = ".mcp.json"
_TYPES: Mapping[str, McpTransport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
_KEYS = frozenset(
    (
        "type", "transport", "command", "args", "env", "cwd", "url", "headers", "trusted",
        "autoApprove", "disabled", "timeout", "description",
    )
)
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SECRET_NAME = re.compile(r"(_API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD|^TOKEN|^PASSWORD)$", re.I)
_SECRET_HEADER = re.compile(r"authorization|token|key|secret|cookie", re.I)
_MIN_SECRET_CHARS = 4


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One server, its `${...}` values expanded. `error` set: the entry cannot be used, and
    the server is shown as failed with that reason."""

    name: str
    transport: McpTransport = "stdio"
    command: str = ""
    args: tuple[str, ...] = field(default=(), repr=False)  # may hold secrets
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold secrets
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold secrets
    trusted: bool = False
    auto_approve: tuple[str, ...] = ()
    timeout: float | None = None  # seconds for one tool call; None: the mcp.toolTimeout setting
    error: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    source: str = field(default="", compare=False)
    # The SHA-256 of the workspace file it came from: its servers wait for the user's approval
    # of that content (approval.py). None: a source the user wrote (their file, settings).
    digest: str | None = None

    @property
    def display(self) -> str:
        """The command line or URL, secrets scrubbed, for the editor."""
        text = " ".join((self.command, *self.args)) if self.transport == "stdio" else self.url
        return scrub(text, self.secrets)


def scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text


def default_user_file() -> Path:
    return Path(platformdirs.user_config_dir("agent-server")) / "mcp.json"


def load_server_configs(
    workspace: Path,
    *,
    settings_servers: Mapping[str, Any] | None = None,
    user_file: Path | None = None,
    workspace_file: bool = True,
    extra: Sequence[McpServerConfig] = (),
    env: Mapping[str, str],
) -> tuple[McpServerConfig, ...]:
    """Every configured server that is not disabled, sorted by name.

    `user_file` None: no user-level file. `extra`: servers a front end adds (ACP), which
    override the others by name.
    """
    found: dict[str, McpServerConfig] = {}
    sources: list[tuple[str, Mapping[str, Any]]] = []
    if user_file is not None:
        sources.append((str(user_file), _read_file(user_file)[0]))
    digests: dict[str, str] = {}
    if workspace_file:
        path = workspace / WORKSPACE_FILE
        content, digest = _read_file(path)
        sources.append((str(path), content))
        if digest is not None:
            digests[str(path)] = digest  # of the very bytes parsed
    if settings_servers:
        sources.append(("mcp.servers", {"mcpServers": settings_servers}))
    for source, data in sources:
        for config in parse_servers(data, source, workspace=workspace, env=env):
            if source in digests:
                config = replace(config, digest=digests[source])
            found[config.name] = config
        for name in _disabled(data):
            found.pop(name, None)
    for config in extra:
        found[config.name] = config
    return tuple(found[name] for name in sorted(found))


def parse_servers(
    data: Mapping[str, Any], source: str, *, workspace: Path, env: Mapping[str, str]
) -> list[McpServerConfig]:
    """The servers of one file's JSON (`{"mcpServers": {...}}`), disabled ones left out. A
    file that could not be read is `{"error": ...}` and gives one failed pseudo-server."""
    if "error" in data and "mcpServers" not in data:
        return [McpServerConfig(name=f"({Path(source).name})", error=str(data["error"]),
                                source=source)]
    servers = data.get("mcpServers", {})
    if not isinstance(servers, Mapping):
        return [McpServerConfig(name=f"({Path(source).name})",
                                error=f"{source}: 'mcpServers' must be an object of servers",
                                source=source)]
    out: list[McpServerConfig] = []
    for name, entry in servers.items():
        if isinstance(entry, Mapping) and entry.get("disabled") is True:
            continue
        out.append(parse_server(str(name), entry, source, workspace=workspace, env=env))
    return out


def parse_server(
    name: str, entry: Any, source: str, *, workspace: Path, env: Mapping[str, str]
) -> McpServerConfig:
    """One entry; never raises: a problem becomes the config's `error`."""
    where = f"{source}: server {name!r}"
    try:
        return _parse(name, entry, where, source, workspace, env)
    except _EntryError as problem:
        return McpServerConfig(name=name, error=f"{where}: {problem}", source=source)


def servers_from_acp(
    servers: Sequence[Any], *, workspace: Path, env: Mapping[str, str]
) -> tuple[McpServerConfig, ...]:
    """The `mcpServers` of an Agent Client Protocol `session/new`: stdio servers as
    `{name, command, args, env: [{name, value}]}`, HTTP and SSE ones as
    `{type, name, url, headers: [{name, value}]}`."""
    out: list[McpServerConfig] = []
    for index, server in enumerate(servers):
        if not isinstance(server, Mapping) or not isinstance(server.get("name"), str):
            out.append(McpServerConfig(name=f"(mcpServers[{index}])",
                                       error=f"mcpServers[{index}]: expected an object with a name",
                                       source="acp"))
            continue
        entry = dict(server)
        name = entry.pop("name")
        for key in ("env", "headers"):
            pairs = entry.get(key)
            if isinstance(pairs, list):
                entry[key] = {
                    str(pair.get("name")): pair.get("value")
                    for pair in pairs
                    if isinstance(pair, Mapping)
                }
        out.append(parse_server(name, entry, "acp", workspace=workspace, env=env))
    return tuple(out)


# --- parsing ---------------------------------------------------------------------------------


class _EntryError(ValueError):
    pass


def _read_file(path: Path) -> tuple[Mapping[str, Any], str | None]:
    """The file's JSON (or `{"error": ...}`), and the SHA-256 of the bytes read."""
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # a directory: a sandbox's placeholder
        return {}, None
    except OSError as exc:
        return {"error": f"{path}: cannot be read ({exc.strerror})"}, None
    digest = hashlib.sha256(raw).hexdigest()
    if not raw.strip():
        return {}, None  # an empty file (a sandbox's placeholder, say): no servers
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return {"error": f"{path}: not valid UTF-8"}, digest
    except json.JSONDecodeError as exc:
        return {"error": f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})"}, digest
    if not isinstance(data, Mapping):
        return {"error": f"{path}: expected a JSON object with 'mcpServers'"}, digest
    return data, digest


def _disabled(data: Mapping[str, Any]) -> list[str]:
    servers = data.get("mcpServers")
    if not isinstance(servers, Mapping):
        return []
    return [
        str(name)
        for name, entry in servers.items()
        if isinstance(entry, Mapping) and entry.get("disabled") is True
    ]


def _parse(
    name: str,
    entry: Any,
    where: str,
    source: str,
    workspace: Path,
    env: Mapping[str, str],
) -> McpServerConfig:
    if not name.strip():
        raise _EntryError("the server name is empty")
    if not isinstance(entry, Mapping):
        raise _EntryError("expected an object (command, args, env or url, headers)")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise _EntryError(f"unknown keys {unknown}")
    secrets: list[str] = []
    expand = _Expander(workspace, env, secrets)
    kind = entry.get("type", entry.get("transport"))
    if kind is None:
        kind = "http" if "url" in entry and "command" not in entry else "stdio"
    if kind not in _TYPES:
        raise _EntryError(f"'type' must be one of {', '.join(_TYPES)}, not {kind!r}")
    transport = _TYPES[kind]
    trusted = entry.get("trusted", False)
    if not isinstance(trusted, bool):
        raise _EntryError("'trusted' must be true or false")
    auto_approve = _strings(entry.get("autoApprove", []), "autoApprove")
    timeout = entry.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise _EntryError("'timeout' must be a positive number of seconds")
    common: dict[str, Any] = {
        "name": name,
        "transport": transport,
        "trusted": trusted,
        "auto_approve": auto_approve,
        "timeout": float(timeout) if timeout is not None else None,
        "source": source,
    }
    if transport == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _EntryError("a stdio server needs 'command' (the program to run)")
        args = tuple(expand(arg, f"args[{i}]") for i, arg in
                     enumerate(_strings(entry.get("args", []), "args")))
        env_pairs = []
        for key, value in _string_map(entry.get("env", {}), "env"):
            expanded = expand(value, f"env.{key}")
            if _SECRET_NAME.search(key):
                secrets.append(expanded)
            env_pairs.append((key, expanded))
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise _EntryError("'cwd' must be a string")
        config = McpServerConfig(
            command=expand(command, "command"),
            args=args,
            env=tuple(env_pairs),
            cwd=expand(cwd, "cwd") if cwd else str(workspace),
            **common,
        )
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _EntryError(f"an {transport} server needs 'url' (http:// or https://)")
        header_pairs = []
        for key, value in _string_map(entry.get("headers", {}), "headers"):
            expanded = expand(value, f"headers.{key}")
            if _SECRET_HEADER.search(key):
                secrets.append(expanded)
                # "Bearer <token>": the token alone must not show either
                secrets.extend(expanded.split()[1:])
            header_pairs.append((key, expanded))
        config = McpServerConfig(
            url=expand(url, "url"), headers=tuple(header_pairs), **common
        )
    kept = tuple(sorted({s for s in secrets if len(s) >= _MIN_SECRET_CHARS}))
    return replace(config, secrets=kept)


class _Expander:
    """`${VAR}`, `${VAR:-default}`, `${env:VAR}` and `${workspaceFolder}` in one value. A value
    from the environment is remembered as a secret when its name looks secret, or when it goes
    into the server's env or headers (`key` says where)."""

    def __init__(self, workspace: Path, env: Mapping[str, str], secrets: list[str]) -> None:
        self._workspace = workspace
        self._env = env
        self._secrets = secrets

    def __call__(self, value: str, key: str) -> str:
        def one(match: re.Match[str]) -> str:
            variable, default = match.group(1), match.group(2)
            if variable == "workspaceFolder":
                return str(self._workspace)
            found = self._env.get(variable)
            if found:
                if _SECRET_NAME.search(variable) or key.startswith(("env.", "headers.")):
                    self._secrets.append(found)
                return found
            if default is not None:
                return default
            raise _EntryError(
                f"{key} uses ${{{variable}}}, which is not set in the server's environment; "
                f"set {variable} (in VS Code: Agent: Set MCP Secret), or give a default "
                f"with ${{{variable}:-value}}"
            )

        return _VARIABLE.sub(one, value)


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _EntryError(f"'{key}' must be a list of strings")
    return tuple(value)


def _string_map(value: Any, key: str) -> list[tuple[str, str]]:
    if not isinstance(value, Mapping):
        raise _EntryError(f"'{key}' must be an object of strings")
    out: list[tuple[str, str]] = []
    for name, item in value.items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise _EntryError(f"'{key}.{name}' must be a string")
        out.append((str(name), str(item)))
    return out
