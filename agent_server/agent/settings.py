"""Agent settings: the `agent` section of the editor's configuration, or the CLI's config file.

`settings_from_json` is the one place raw settings are read; a bad value raises ConfigError
naming the key and what is expected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeAlias, cast, get_args, get_origin, get_type_hints, is_typeddict

from agent_server.context.trigger import (
    COMPACTION_ENGINES,
    CompactionEngine,
    CompactionHooks,
    CompactionSettings,
    SummaryMode,
)
from agent_server.errors import ConfigError
from agent_server.llm.providers import DEFAULT_PROVIDER, PROVIDER_NAMES, provider_spec
from agent_server.llm.stream import THINKING_LEVELS, ThinkingLevel
from agent_server.protocol import AgentSettings as SettingsShape
from agent_server.protocol import CacheRetentionSetting, PermissionMode, SandboxMode

# "auto": short, or long while the editor says the user is idle (agent/userIdle) and for a
# turn whose prompt came after the cache had expired (the session's retention_for_call).
CacheRetentionName: TypeAlias = CacheRetentionSetting
CACHE_RETENTIONS: tuple[str, ...] = get_args(CacheRetentionSetting)
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)


# Toolchains in the home directory, shown read-only in the sandbox by default (the rest of
# the home is hidden): programs, not credentials (so `~/.cargo/bin`, never `~/.cargo`, which
# holds `credentials.toml`). See agent/tools/sandbox.py.
DEFAULT_READ_PATHS = (
    "~/.pyenv", "~/.nvm", "~/.rustup", "~/.cargo/bin", "~/.local/bin", "~/.local/share/uv",
    "~/.bun/bin", "~/.deno/bin", "~/go/bin", "~/.sdkman/candidates", "~/.volta",
    "~/.asdf/installs", "~/.local/share/mise/installs", "~/.local/share/fnm",
)


@dataclass(frozen=True, slots=True)
class CommandLimits:
    """The `tools.limits` settings; 0 is no limit. `memory_mb` None: half the machine's
    memory."""

    processes: int = 1024
    memory_mb: int | None = None
    file_size_mb: int = 8192
    cpu_seconds: int = 0


@dataclass(frozen=True, slots=True)
class ToolOptions:
    # Variable names (or globs) commands receive even though they look secret; provider
    # keys never pass (agent/tools/environment.py).
    env_pass: tuple[str, ...] = ()
    # Whether bash runs in the sandbox: "auto" (every command, where this machine can; the
    # user may let one out), "always" (every command, or none), "off" (agent/tools/sandbox.py).
    sandbox: SandboxMode = "auto"
    network: bool = False  # whether sandboxed commands may use the network
    # Home-directory toolchains shown read-only in the sandbox (the rest of the home is not).
    read_paths: tuple[str, ...] = DEFAULT_READ_PATHS
    # What one command may consume, sandboxed or not (agent/tools/limits.py).
    limits: CommandLimits = field(default_factory=CommandLimits)
    # Offer the repo_map tool (when the `repomap` extra is installed): docs/tools.md; and
    # the budget of a map the model asks for without naming one.
    repo_map: bool = False
    repo_map_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class McpOptions:
    """MCP servers (docs/mcp.md). `servers`: the `mcp.servers` setting, an object of servers
    in the `mcpServers` shape, checked server by server when sessions start."""

    servers: Mapping[str, Any] = field(default_factory=dict)
    user_file: str | None = None  # None: <user config dir>/agent-server/mcp.json; "": none
    workspace_file: bool = True  # read the workspace's .mcp.json
    startup_timeout: float = 30.0  # seconds for a server to start and list its tools
    tool_timeout: float = 600.0  # seconds for one tool call (a server's 'timeout' overrides)
    max_result_mb: int = 64  # the most one answer of a stdio server may have; larger: refused


@dataclass(frozen=True, slots=True)
class AgentSettings:
    provider: str = DEFAULT_PROVIDER  # a name of llm.providers.PROVIDERS
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    cache_retention: CacheRetentionName = "short"
    # How hard a model that can think does (llm.stream.ThinkingLevel); a session keeps the
    # level it last switched to, like its model.
    thinking: ThinkingLevel = "off"
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    permissions_mode: PermissionMode = "allowReads"
    sessions_dir: str | None = None
    models_file: str | None = None
    # The window of a `model` that neither the registry nor the models file knows, served
    # at `base_url` (a local OpenAI-compatible server): model_setup defines it on the spot.
    context_window: int | None = None
    max_steps: int = 200  # model calls in one turn before it stops with max_turn_requests
    bash_timeout: float = 120.0
    tools: ToolOptions = field(default_factory=ToolOptions)
    mcp: McpOptions = field(default_factory=McpOptions)

    @property
    def key_variable(self) -> str:
        return self.api_key_env or provider_spec(self.provider).key_variable

    def with_overrides(self, **changes: Any) -> AgentSettings:
        return replace(self, **changes)


def settings_from_json(
    data: Mapping[str, Any] | None, base: AgentSettings | None = None
) -> AgentSettings:
    """Settings from the camelCase JSON form; keys not given keep `base`'s values."""
    settings = base or AgentSettings()
    if data is None:
        return settings
    if not isinstance(data, Mapping):
        raise ConfigError("settings must be an object")
    reader = _Reader(data, "")
    compaction_data = data.get("compaction")
    compaction = settings.compaction
    if compaction_data is not None:
        if not isinstance(compaction_data, Mapping):
            raise ConfigError("setting 'compaction' must be an object")
        sub = _Reader(compaction_data, "compaction.")
        # Types are read here; ranges are CompactionSettings' own checks.
        compaction = CompactionSettings(
            enabled=sub.boolean("enabled", compaction.enabled),
            reserve_tokens=sub.optional_int("reserveTokens", compaction.reserve_tokens),
            keep_recent_tokens=sub.integer("keepRecentTokens", compaction.keep_recent_tokens),
            keep_recent_turns=sub.integer("keepRecentTurns", compaction.keep_recent_turns),
            model=sub.optional_str("model", compaction.model),
            summary=cast(SummaryMode, sub.optional_str("summary", None) or compaction.summary),
            cold_cache_share=sub.number("coldCacheShare", compaction.cold_cache_share),
            threshold=sub.optional_number("threshold", compaction.threshold),
            hooks=_hooks(compaction_data.get("hooks"), compaction.hooks),
            engine=cast(
                CompactionEngine,
                sub.choice("engine", compaction.engine, COMPACTION_ENGINES),
            ),
            clear_tool_results=sub.boolean("clearToolResults", compaction.clear_tool_results),
        )
    permissions = data.get("permissions")
    mode = settings.permissions_mode
    if permissions is not None:
        if not isinstance(permissions, Mapping):
            raise ConfigError("setting 'permissions' must be an object")
        mode = cast(
            PermissionMode,
            _Reader(permissions, "permissions.").choice("mode", mode, PERMISSION_MODES),
        )
    tools = settings.tools
    tools_data = data.get("tools")
    if tools_data is not None:
        if not isinstance(tools_data, Mapping):
            raise ConfigError("setting 'tools' must be an object")
        sub = _Reader(tools_data, "tools.")
        env_pass = tools.env_pass
        env_data = tools_data.get("env")
        if env_data is not None:
            if not isinstance(env_data, Mapping):
                raise ConfigError("setting 'tools.env' must be an object")
            env_pass = _Reader(env_data, "tools.env.").names("pass", env_pass)
        tools = ToolOptions(
            env_pass=env_pass,
            sandbox=cast(SandboxMode, sub.choice("sandbox", tools.sandbox, SANDBOX_MODES)),
            network=sub.boolean("network", tools.network),
            read_paths=sub.paths("readPaths", tools.read_paths),
            limits=_limits(tools_data.get("limits"), tools.limits),
            repo_map=sub.boolean("repoMap", tools.repo_map),
            repo_map_tokens=sub.integer("repoMapTokens", tools.repo_map_tokens, minimum=256),
        )
    return AgentSettings(
        mcp=_mcp_options(data.get("mcp"), settings.mcp),
        provider=reader.choice("provider", settings.provider, PROVIDER_NAMES),
        model=reader.optional_str("model", settings.model),
        base_url=reader.optional_str("baseUrl", settings.base_url),
        api_key_env=reader.optional_str("apiKeyEnv", settings.api_key_env),
        cache_retention=cast(
            CacheRetentionName,
            reader.choice("cacheRetention", settings.cache_retention, CACHE_RETENTIONS),
        ),
        thinking=cast(ThinkingLevel, reader.choice("thinking", settings.thinking, THINKING_LEVELS)),
        compaction=compaction,
        permissions_mode=mode,
        sessions_dir=reader.folder("sessionsDir", settings.sessions_dir),
        models_file=reader.optional_str("modelsFile", settings.models_file),
        context_window=reader.optional_int(
            "contextWindow", settings.context_window, minimum=1
        ),
        max_steps=reader.integer("maxSteps", settings.max_steps, minimum=1),
        bash_timeout=float(reader.integer("bashTimeout", int(settings.bash_timeout), minimum=1)),
        tools=tools,
    )


def settings_skipping_bad(
    data: Mapping[str, Any] | None,
) -> tuple[AgentSettings, list[str]]:
    """`settings_from_json`, with each setting that cannot be read left at its default
    rather than every setting: one typo at a start (no settings in force yet) must not put
    the provider and the sessions' folder back to theirs. The settings are read one by one
    (an object's keys one level down: `compaction.threshold` alone); the problems are the
    messages of the ones left out."""
    try:
        return settings_from_json(data), []
    except ConfigError:
        pass
    if not isinstance(data, Mapping):
        return AgentSettings(), ["settings must be an object"]
    settings, problems = AgentSettings(), []
    for key, value in data.items():
        parts = (
            [{key: {sub: inner}} for sub, inner in value.items()]
            if isinstance(value, Mapping) and value
            else [{key: value}]
        )
        for part in parts:
            try:
                settings = settings_from_json(part, settings)
            except ConfigError as error:
                problems.append(error.message)
    return settings, problems


def unknown_settings(
    data: Mapping[str, Any], shape: Any = SettingsShape, prefix: str = ""
) -> list[str]:
    """The keys of `data` no setting has (a typo: `compaction.thresold`), by their dotted
    names; the settings are the protocol's `AgentSettings` type (the README's table)."""
    hints = get_type_hints(shape)
    unknown: list[str] = []
    for key, value in data.items():
        if key not in hints:
            unknown.append(f"{prefix}{key}")
            continue
        hint = hints[key]
        inner = get_args(hint)[0] if get_origin(hint) is not None and get_args(hint) else hint
        if is_typeddict(inner) and isinstance(value, Mapping):
            unknown += unknown_settings(value, inner, f"{prefix}{key}.")
    return unknown


def _hooks(data: Any, base: CompactionHooks) -> CompactionHooks:
    if data is None:
        return base
    if not isinstance(data, Mapping):
        raise ConfigError("setting 'compaction.hooks' must be an object")
    reader = _Reader(data, "compaction.hooks.")
    return CompactionHooks(
        before=reader.commands("before", base.before),
        after=reader.commands("after", base.after),
        timeout=reader.number("timeout", base.timeout),
    )


def _limits(data: Any, base: CommandLimits) -> CommandLimits:
    if data is None:
        return base
    if not isinstance(data, Mapping):
        raise ConfigError("setting 'tools.limits' must be an object")
    reader = _Reader(data, "tools.limits.")
    return CommandLimits(
        processes=reader.integer("processes", base.processes, minimum=0),
        memory_mb=reader.optional_int("memoryMB", base.memory_mb, minimum=0),
        file_size_mb=reader.integer("fileSizeMB", base.file_size_mb, minimum=0),
        cpu_seconds=reader.integer("cpuSeconds", base.cpu_seconds, minimum=0),
    )


def _mcp_options(data: Any, base: McpOptions) -> McpOptions:
    if data is None:
        return base
    if not isinstance(data, Mapping):
        raise ConfigError("setting 'mcp' must be an object")
    reader = _Reader(data, "mcp.")
    servers = data.get("servers", base.servers)
    if servers is None:
        servers = {}
    if not isinstance(servers, Mapping):
        raise ConfigError("setting 'mcp.servers' must be an object of servers, by name")
    user_file = data.get("userFile", base.user_file)
    if user_file is not None and not isinstance(user_file, str):
        raise ConfigError("setting 'mcp.userFile' must be a path, or \"\" for none")
    return McpOptions(
        servers=dict(servers),
        user_file=user_file,
        workspace_file=reader.boolean("workspaceFile", base.workspace_file),
        startup_timeout=float(
            reader.integer("startupTimeout", int(base.startup_timeout), minimum=1)
        ),
        tool_timeout=float(reader.integer("toolTimeout", int(base.tool_timeout), minimum=1)),
        max_result_mb=reader.integer("maxResultMB", base.max_result_mb, minimum=1),
    )


class _Reader:
    """Typed reads of one settings object; errors name the full key."""

    def __init__(self, data: Mapping[str, Any], prefix: str) -> None:
        self.data = data
        self.prefix = prefix

    def _fail(self, key: str, expected: str) -> ConfigError:
        return ConfigError(
            f"setting '{self.prefix}{key}' must be {expected}, not {self.data.get(key)!r}"
        )

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.data.get(key)
        if value is None or value == "":
            return default
        if value not in allowed:
            raise self._fail(key, "one of " + ", ".join(allowed))
        return str(value)

    def optional_str(self, key: str, default: str | None) -> str | None:
        if key not in self.data:
            return default
        value = self.data[key]
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self._fail(key, "a string")
        return value

    def folder(self, key: str, default: str | None) -> str | None:
        """A folder named absolutely (or from `~`): a relative one would be relative to
        wherever the server started, the workspace folder in an editor, where a repository
        would choose it (and ship what it holds)."""
        value = self.optional_str(key, default)
        if value is not None and not (value.startswith("~") or Path(value).is_absolute()):
            raise self._fail(key, "an absolute folder (or one starting with ~)")
        return value

    def names(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        return self._strings(key, default, "a list of variable names")

    def commands(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        return self._strings(key, default, "a list of shell commands", lambda c: bool(c.strip()))

    def paths(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        return self._strings(
            key, default, "a list of paths (absolute, or starting with ~)",
            lambda path: path.startswith(("/", "~")),
        )

    def _strings(
        self, key: str, default: tuple[str, ...], what: str,
        valid: Callable[[str], bool] = bool,
    ) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(
            isinstance(v, str) and v and valid(v) for v in value
        ):
            raise self._fail(key, what)
        return tuple(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(key, "true or false")
        return value

    def integer(self, key: str, default: int, *, minimum: int | None = None) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
            raise self._fail(key, "a whole number")
        if minimum is not None and value < minimum:
            raise self._fail(key, f"at least {minimum}")
        return int(value)

    def number(self, key: str, default: float) -> float:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(key, "a number")
        return float(value)

    def optional_number(self, key: str, default: float | None) -> float | None:
        if key in self.data and self.data[key] is None:
            return None
        if key not in self.data:
            return default
        return self.number(key, 0.0)

    def optional_int(
        self, key: str, default: int | None, *, minimum: int | None = None
    ) -> int | None:
        if key in self.data and self.data[key] is None:
            return None
        if key not in self.data:
            return default
        return self.integer(key, 0, minimum=minimum)
