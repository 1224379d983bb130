"""Agent settings: the `agent` section of the editor's configuration, or the CLI's config file.

Each field is described once, with `setting(...)` (agent_server/settings_schema.py): from the
fields come the reader (`settings_from_json`, the one place raw settings are read; a bad value
raises ConfigError naming the key and what is expected), the editor's settings and the
README's table (`make protocol`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_server.context.trigger import CompactionSettings
from agent_server.errors import ConfigError
from agent_server.llm.providers import DEFAULT_PROVIDER, PROVIDER_NAMES, PROVIDERS, provider_spec
from agent_server.llm.stream import ThinkingLevel
from agent_server.protocol import (
    PERMISSION_MODE_NAMES,
    CacheRetentionSetting,
    PermissionMode,
    SandboxMode,
)
from agent_server.settings_schema import check, read, root, setting, unknown_keys

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

    processes: int = setting(
        1024, "Processes at once, the command and all it starts (`0`: no limit).", minimum=0
    )
    memory_mb: int | None = setting(
        None,
        "Memory of a command's processes together, in MB (`0`: no limit).",
        name="memoryMB", default_text="half the machine's memory", minimum=0,
    )
    file_size_mb: int = setting(
        8192,
        "The largest file one of a command's processes may write, in MB (`0`: no limit).",
        name="fileSizeMB", minimum=0,
    )
    cpu_seconds: int = setting(
        0, "CPU seconds per process (`0`: none; the timeout bounds the time).", minimum=0
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class ToolOptions:
    # Whether bash runs in the sandbox: "auto" (every command, where this machine can; the
    # user may let one out), "always" (every command, or none), "off" (agent/tools/sandbox.py).
    sandbox: SandboxMode = setting(
        "auto",
        "Whether shell commands run in the sandbox (Linux, bubblewrap): the workspace "
        "writable, the rest read-only, no network unless allowed. An approved command runs in "
        "it too, unless you choose \"Allow outside the sandbox\" for it.",
        value_texts=(
            "Sandbox every shell command where this machine can; you may let one out when asked",
            "Sandbox every shell command, with no way out; without a sandbox none runs",
            "Never sandbox shell commands",
        ),
        authority=True, editor="machine",
    )
    network: bool = setting(
        False, "Let sandboxed shell commands use the network.", authority=True, editor="machine"
    )
    # Variable names (or globs) commands receive even though they look secret; provider
    # keys never pass (agent/tools/environment.py).
    env_pass: tuple[str, ...] = setting(
        (),
        "Environment variables (names or `*` globs) shell commands receive although they look "
        "secret, e.g. `NPM_TOKEN`. Provider API keys are never passed.",
        name="env.pass", items="names", authority=True, editor="machine",
    )
    # Home-directory toolchains shown read-only in the sandbox (the rest of the home is not).
    read_paths: tuple[str, ...] = setting(
        DEFAULT_READ_PATHS,
        "Home-directory toolchains the sandbox shows, read-only (the rest of the home is an "
        "empty folder).",
        default_text="`~/.pyenv`, `~/.nvm`, `~/.rustup`, `~/.cargo/bin`, ...",
        items="paths", authority=True,
    )
    # What one command may consume, sandboxed or not (agent/tools/limits.py).
    limits: CommandLimits = field(default_factory=CommandLimits)
    # Offer the repo_map tool (when the `repomap` extra is installed): docs/tools.md; and
    # the budget of a map the model asks for without naming one.
    repo_map: bool = setting(
        False,
        "Offer the repo_map tool (Aider's repository map as a tool; needs "
        "`pip install 'agent-server[repomap]'`; docs/tools.md).",
    )
    repo_map_tokens: int = setting(
        1024, "The budget of a map the model asks for without naming one.", minimum=256
    )
    # The editor shows each command in a terminal of the session's own, where the user types
    # into the running command: its standard input is then a pipe the editor writes to
    # (`agent/tool/input`, agent/tools/command_input.py), not the empty /dev/null.
    terminal_visible: bool = setting(
        False,
        "Show each shell command the agent runs, with its output as it comes, in a terminal "
        "of the session's own (in VS Code, named **Agent:** and the session's title), where "
        "what you type goes to the running command's input: Enter sends the line, Ctrl-D "
        "ends the input, Ctrl-C interrupts the command (the turn goes on). The command still "
        "runs in the server, in the sandbox. Off: commands get no input at all (an immediate "
        "end of input).",
        name="terminal.visible", editor="window",
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True, slots=True)
class McpOptions:
    """MCP servers (docs/mcp.md). `servers`: the `mcp.servers` setting, an object of servers
    in the `mcpServers` shape, checked server by server when sessions start."""

    servers: Mapping[str, Any] = setting(
        {},
        "MCP servers by name, in the `mcpServers` shape of `.mcp.json`: `{\"name\": "
        "{\"command\", \"args\", \"env\"}}` or `{\"name\": {\"type\": \"http\", \"url\", "
        "\"headers\"}}`, with `trusted` and `disabled`; added to the workspace's `.mcp.json` "
        "and the user-level file. Keep secrets out: write `${NAME}` and store the value with "
        "**Agent: Set MCP Secret**. See docs/mcp.md.",
        default_text="none", authority=True, editor="machine",
    )
    # None: <user config dir>/agent-server/mcp.json; "": none
    user_file: str | None = setting(
        None,
        "The user-level MCP file (`\"\"` for none).",
        default_text="`<user config dir>/agent-server/mcp.json`",
        keeps_empty=True, authority=True,
    )
    workspace_file: bool = setting(
        True, "Whether to read the workspace's `.mcp.json`.", authority=True
    )
    startup_timeout: float = setting(
        30.0, "Seconds an MCP server has to start and list its tools.",
        whole=True, minimum=1, editor="window",
    )
    first_request_wait: float = setting(
        5.0,
        "Seconds a session's first request waits for MCP servers still starting; one ready "
        "later is offered as a change of the tools (`/tools`), so a slow server does not hold "
        "the first prompt.",
        whole=True, minimum=0, editor="window",
    )
    tool_timeout: float = setting(
        600.0,
        "Seconds one MCP tool call may take (a server's own `timeout` overrides it).",
        whole=True, minimum=1, editor="window",
    )
    max_result_mb: int = setting(
        64,
        "The most one message of a stdio MCP server may have, in MB; a larger one is refused.",
        name="maxResultMB", minimum=1,
    )

    def __post_init__(self) -> None:
        check(self)


@root
@dataclass(frozen=True, slots=True)
class AgentSettings:
    provider: str = setting(
        DEFAULT_PROVIDER,
        "The model provider: `sim` is the built-in simulator (no key, no network).",
        values=PROVIDER_NAMES,
        value_texts=tuple(spec.description for spec in PROVIDERS.values()),
        editor="window",
    )
    model: str | None = setting(
        None,
        "A model id from the registry (docs/providers.md) or the models file.",
        default_text="the provider's: "
        + ", ".join(f"`{spec.default_model}` ({spec.name})" for spec in PROVIDERS.values()),
        editor="window",
    )
    base_url: str | None = setting(
        None,
        "API base URL: a proxy, a local OpenAI-compatible server (Ollama, vLLM, llama.cpp), "
        "or a running simulator.",
        default_text="the provider's",
        authority=True, editor="machine",
    )
    api_key_env: str | None = setting(
        None,
        "The environment variable the server reads the key from. Store the key itself with "
        "**Agent: Set API Key** (secret storage), never in settings.",
        default_text="`ANTHROPIC_API_KEY` / `OPENAI_API_KEY`",
        authority=True, editor="machine",
    )
    models_file: str | None = setting(
        None,
        "A JSON or YAML file of extra models (window, max output, prices).",
        default_text="none", authority=True,
    )
    # The window of a `model` that neither the registry nor the models file knows, served
    # at `base_url` (a local OpenAI-compatible server): model_setup defines it on the spot.
    context_window: int | None = setting(
        None,
        "The window of a `model` only the server at `baseUrl` knows (`openai-chat`, "
        "`openai-responses`).",
        default_text="`32768`", minimum=1,
    )
    # "auto": short, or long while the editor says the user is idle (agent/userIdle) and for
    # a turn whose prompt came after the cache had expired (the session's retention_for_call).
    cache_retention: CacheRetentionSetting = setting(
        "short",
        "Prompt-cache retention: `short` is 5 minutes (30 on OpenAI from GPT-5.6), `long` 1 "
        "hour (24 on OpenAI, 12 from GPT-5.6 on the Responses API).",
        value_texts=(
            "No prompt caching",
            "5 minutes",
            "1 hour (Anthropic) / 24 hours (OpenAI)",
            "Short, and long while the window is out of focus or after the user came back "
            "past the short lifetime",
        ),
        editor="window",
    )
    # How hard a model that can think does (llm.stream.ThinkingLevel); a session keeps the
    # level it last switched to, like its model.
    thinking: ThinkingLevel = setting(
        "off",
        "How hard a model that can think does, before it answers (its thinking shows "
        "collapsed; it is billed as output). A session keeps the level it last switched to "
        "(**Agent: Thinking Level**, `agent/thinking/set`). On Anthropic a change re-reads the "
        "conversation without the prompt cache; the transcript says what it costs.",
        value_texts=(
            "No extended thinking (OpenAI: the model's default reasoning effort)",
            "Anthropic: low effort (adaptive models) or a 4k thinking budget; OpenAI: low "
            "reasoning effort",
            "Anthropic: medium effort or a 10k budget; OpenAI: medium reasoning effort",
            "Anthropic: high effort or a 32k budget; OpenAI: high reasoning effort",
        ),
        editor="window",
    )
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    permissions_mode: PermissionMode = setting(
        "allowReads",
        "When the agent asks before running a tool.",
        name="permissions.mode",
        value_labels=tuple(label for label, _ in PERMISSION_MODE_NAMES.values()),
        value_texts=tuple(meaning for _, meaning in PERMISSION_MODE_NAMES.values()),
        authority=True, editor="window",
    )
    sessions_dir: str | None = setting(
        None,
        "Folder for session ledgers: an absolute path, or one starting with `~` (a relative "
        "one is refused); never where the approvals of `.mcp.json` are kept (docs/mcp.md).",
        default_text="the user data directory",
        folder=True, authority=True, editor="resource",
    )
    max_steps: int = setting(
        200, "Model calls in one turn before it stops.", minimum=1
    )
    bash_timeout: float = setting(
        120.0, "Seconds before a shell command is killed.", whole=True, minimum=1
    )
    tools: ToolOptions = field(default_factory=ToolOptions)
    mcp: McpOptions = field(default_factory=McpOptions)

    def __post_init__(self) -> None:
        check(self)

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
    result: AgentSettings = read(AgentSettings, data, settings)
    return result


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


def unknown_settings(data: Mapping[str, Any]) -> list[str]:
    """The keys of `data` no setting has (a typo: `compaction.thresold`), by their dotted
    names."""
    return unknown_keys(AgentSettings, data)
