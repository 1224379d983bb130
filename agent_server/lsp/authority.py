"""Which of an editor's settings the language server takes (docs/security.md, Authority).

A setting that carries authority (agent/settings.py marks it: the permission mode, the
sandbox, the base URL and key variable, hooks, MCP servers, the sessions folder, ...) comes
only from the user. The server cannot tell a workspace-level value from a user-level one in
what an editor sends (Zed's `.zed/settings.json`, Helix's `.helix/languages.toml` and
Neovim's exrc can all set a server's settings from a repository), so it takes those settings
from the user's own config file (the one `agent-server chat` and `acp` read), under the
editor's other settings. An editor that keeps a workspace's values out of them itself, as the
VS Code extension does (machine scope, user-only keys), starts the server with
`serve --trust-editor-settings`, and its values are taken as they come.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_server.agent.config_file import default_config_path, load_config
from agent_server.agent.settings import AgentSettings
from agent_server.errors import ConfigError
from agent_server.settings_schema import described, merge_settings

log = logging.getLogger(__name__)


@functools.cache
def authority_keys() -> tuple[str, ...]:
    """The dotted keys of the settings that carry authority."""
    return tuple(one.key for one in described(AgentSettings) if one.spec.authority)


def without_authority(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`data` without the settings that carry authority, and the keys it had of them. An
    object on the way to one that is not an object (`"permissions": 5`) goes too: merged
    over the config file it would replace the user's own value with the default."""
    out: dict[str, Any] = _plain(data)
    dropped: list[str] = []
    for key in authority_keys():
        *path, last = key.split(".")
        node: Any = out
        for part in path:
            inner = node.get(part)
            if inner is not None and not isinstance(inner, dict):
                del node[part]
                dropped.append(key)
            if not isinstance(inner, dict):
                break
            node = inner
        else:
            if node.pop(last, None) is not None:
                dropped.append(key)
    return out, dropped


def _plain(value: Any) -> Any:
    """A copy of `value` with every mapping in it a dict (so that any can be taken from)."""
    if isinstance(value, Mapping):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain(inner) for inner in value]
    return value


@dataclass
class EditorSettings:
    """How one server takes its editor's settings: `trusted` (the editor keeps a workspace's
    values out of the settings that carry authority), else over the user's config file,
    with those settings from it alone. Each setting ignored is said once."""

    trusted: bool = False
    config: Path | None = None  # None: the user's config directory
    said: set[str] = field(default_factory=set)

    def taken(self, editor: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str]:
        """The settings to read, and what to tell the user ("" when nothing is new)."""
        if self.trusted or (editor is not None and not isinstance(editor, Mapping)):
            return editor, ""  # not an object: refused as such where it is read
        kept, dropped = without_authority(editor or {})
        news = [key for key in dropped if key not in self.said]
        self.said.update(news)
        user, problem = self._user_config()
        message = problem
        if news:
            message = (
                f"agent-server: the editor's {', '.join(news)} ignored: a setting that carries "
                f"authority is taken only from your own config file ({self._path()}), since a "
                "workspace's settings could set it (docs/security.md). "
                + (message or "")
            ).strip()
        if user is None and editor is None:
            return None, message
        return merge_settings(user or {}, kept), message

    def _path(self) -> Path:
        try:
            return self.config or default_config_path()
        except ConfigError:
            return Path("~/.config/agent-server/config.json")

    def _user_config(self) -> tuple[Mapping[str, Any] | None, str]:
        try:
            return load_config(self.config, log.warning), ""
        except ConfigError as error:
            if error.message in self.said:
                return None, ""
            self.said.add(error.message)
            return None, f"agent-server: {error.message} (it is left out)"
