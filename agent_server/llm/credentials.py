"""API keys: from the environment variable the settings name, else from the keys
`agent-server login` stored for the user.

The stored keys are in `credentials.json` beside the settings file (the user's config
directory; never a workspace's), by the variable each stands for, readable by the user alone
(written whole, 0600: whole_file.write_whole). The variable, when set, wins. A key is
never logged and never part of a message; a missing one is a MissingApiKeyError that names
the variable to set (or `agent-server login`). Which key each provider reads is its
description's (`llm/providers.py`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from agent_server.whole_file import write_whole

CREDENTIALS_FILE = "credentials.json"

# What a server that checks no key (the simulator, a local OpenAI-compatible server) is sent:
# the SDKs insist on some key. It is not a secret and is never scrubbed from messages.
PLACEHOLDER_API_KEY = "no-key-needed"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key several providers may share: the variable it is read from unless the
    setting `apiKeyEnv` names another, and whose key it is (named in messages; lower-cased,
    the extension's stored secret)."""

    variable: str
    owner: str

    @property
    def family(self) -> str:
        return self.owner.lower()



def read_api_key(variable: str, env: Mapping[str, str] | None = None) -> str | None:
    """The key in `variable` of `env` (default os.environ), else the one stored for it; None
    when neither is there (or blank)."""
    value = (os.environ if env is None else env).get(variable, "").strip()
    return value or stored_keys().get(variable)


def credentials_path() -> Path:
    return Path(platformdirs.user_config_dir("agent-server")) / CREDENTIALS_FILE


def stored_keys() -> dict[str, str]:
    """The stored keys by variable ({} when there are none, or the file is not a regular
    file of JSON strings: it is then left alone, never read as something else)."""
    path = credentials_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = json.loads(handle.read(1 << 20))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    if not isinstance(data, dict):
        return {}
    return {k: v.strip() for k, v in data.items()
            if isinstance(k, str) and isinstance(v, str) and v.strip()}


def store_api_key(variable: str, key: str) -> Path:
    """Keep `key` for `variable` (replacing one kept before); the file's path."""
    keys = stored_keys()
    keys[variable] = key.strip()
    return _write(keys)


def forget_api_key(variable: str | None) -> bool:
    """Drop the key kept for `variable` (None: every key); whether there was one."""
    keys = stored_keys()
    dropped = bool(keys) if variable is None else keys.pop(variable, None) is not None
    if dropped:
        _write({} if variable is None else keys)
    return dropped


def _write(keys: Mapping[str, str]) -> Path:
    """The keys written whole, readable by the user alone (whole_file: a private temporary
    file renamed over the old one)."""
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, (json.dumps(dict(sorted(keys.items())), indent=2) + "\n").encode())
    return path
