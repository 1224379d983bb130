"""The settings file of the command-line front ends (`chat`, `acp`): the `agent` settings keys,
in JSON or YAML, at the user's config directory (`config.json`, `config.yaml` or `config.yml`)
or a path given with --config. Flags given on the command line override it. A bad value is an
error naming the file; a key no setting has is reported and ignored."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import platformdirs
import yaml

from agent_server.agent.settings import AgentSettings, settings_from_json, unknown_settings
from agent_server.errors import ConfigError
from agent_server.llm.models import YAML_SUFFIXES

CONFIG_NAMES = ("config.json", "config.yaml", "config.yml")


def default_config_path() -> Path:
    """The settings file in the user's config directory: the one of CONFIG_NAMES there
    (config.json when there is none); ConfigError when there are several."""
    folder = Path(platformdirs.user_config_dir("agent-server"))
    found = [folder / name for name in CONFIG_NAMES if (folder / name).exists()]
    if len(found) > 1:
        raise ConfigError(
            f"settings files {' and '.join(map(str, found))} are both there: keep one"
        )
    return found[0] if found else folder / CONFIG_NAMES[0]


def load_config(
    path: Path | None, warn: Callable[[str], None] = lambda _: None
) -> Mapping[str, Any] | None:
    """The config file's settings; None when there is none at the default place. A bad
    value raises ConfigError naming the file; `warn` is told of each key no setting has."""
    candidate = path or default_config_path()
    if not candidate.exists():
        if path is not None:
            raise ConfigError(f"config file {path} does not exist")
        return None
    text = candidate.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text) if candidate.suffix in YAML_SUFFIXES else json.loads(text)
    except (ValueError, yaml.YAMLError) as error:
        raise ConfigError(f"config file {candidate} is not valid: {error}") from error
    if not isinstance(data, Mapping):
        raise ConfigError(f"config file {candidate} must hold an object of settings")
    try:
        settings_from_json(data)
    except ConfigError as error:
        raise ConfigError(f"config file {candidate}: {error.message}") from error
    for key in unknown_settings(data):
        warn(f"config file {candidate}: no setting is called {key!r}; it is ignored")
    return data


def flag_overrides(args: Any) -> dict[str, Any]:
    """The settings a command line gives (argparse attributes named as in `agent-server chat
    --help`); flags not given are None and leave the file's value."""
    mode = getattr(args, "mode", None)
    return {
        "provider": getattr(args, "provider", None),
        "model": getattr(args, "model", None),
        "baseUrl": getattr(args, "base_url", None),
        "apiKeyEnv": getattr(args, "api_key_env", None),
        "sessionsDir": getattr(args, "sessions_dir", None),
        "modelsFile": getattr(args, "models_file", None),
        "contextWindow": getattr(args, "context_window", None),
        "permissions": {"mode": mode} if mode else None,
    }


def resolve_settings(
    config: Mapping[str, Any] | None, overrides: Mapping[str, Any]
) -> AgentSettings:
    """The config file's settings with the given (camelCase) overrides; None leaves a key."""
    settings = settings_from_json(config)
    return settings_from_json({k: v for k, v in overrides.items() if v is not None}, settings)
