"""The settings file of the command-line front ends (`chat`, `acp`): the `agent` settings keys,
in JSON or YAML, at the user's config directory or a path given with --config. Flags given on
the command line override it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs
import yaml

from agent_server.agent.settings import AgentSettings, settings_from_json
from agent_server.errors import ConfigError
from agent_server.llm.models import YAML_SUFFIXES


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir("agent-server")) / "config.json"


def load_config(path: Path | None) -> Mapping[str, Any] | None:
    """The config file's settings; None when there is none at the default place."""
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
