"""`agent-server login` and `logout`: keep the configured provider's API key for the user, so
that an editor started without the variable in its environment (a desktop launcher, Zed's
ACP agent) still has it (llm/credentials.py).

The key is typed or pasted without echo (or piped in), checked to be one line of text, and
kept under the variable the settings name (`apiKeyEnv`, else the provider's: the settings
file and the same flags as `chat`). `agent-server acp login` is the same command, for an ACP
editor's terminal login (its auth method `login` runs the agent with that argument).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from agent_server.agent.config_file import flag_overrides, load_config, resolve_settings
from agent_server.errors import ConfigError
from agent_server.llm.credentials import credentials_path, forget_api_key, store_api_key
from agent_server.llm.providers import provider_spec


def login(args: argparse.Namespace) -> int:
    try:
        variable, label = _variable(args)
    except ConfigError as error:
        print(f"agent-server login: {error.message}", file=sys.stderr)
        return 2
    if not variable:
        print(f"agent-server login: {label} needs no key.", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        key = getpass.getpass(f"{label} API key (kept for {variable}; not shown as you type): ")
    else:
        key = sys.stdin.readline()
    key = key.strip()
    if not key or any(char.isspace() or not char.isprintable() for char in key):
        print("agent-server login: that is not a key (empty, or more than one word); nothing "
              "was kept.", file=sys.stderr)
        return 1
    path = store_api_key(variable, key)
    print(f"Kept the {label} key for {variable} in {path} (readable by you alone). The "
          f"variable, when set, still wins; `agent-server logout` forgets the key.")
    return 0


def logout(args: argparse.Namespace) -> int:
    try:
        variable, label = (None, "every provider") if args.all else _variable(args)
    except ConfigError as error:
        print(f"agent-server logout: {error.message}", file=sys.stderr)
        return 2
    if forget_api_key(variable):
        print(f"Forgot the key kept for {variable or 'every variable'} ({credentials_path()}).")
    else:
        print(f"No key was kept for {variable or label}.")
    return 0


def _variable(args: argparse.Namespace) -> tuple[str, str]:
    """The variable the configured provider's key is read from, and whose key it is."""
    config = load_config(Path(args.config).expanduser() if args.config else None)
    settings = resolve_settings(config, flag_overrides(args))
    return settings.key_variable, provider_spec(settings.provider).label
